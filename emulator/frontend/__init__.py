"""Front ends: readers of programs. Each turns one language's text into the IR (emulator.ir) the machine runs.

ptx/ parses PTX (lark grammar in grammars/ptx.lark), caches parsed trees, and lowers them: registers
resolved in their scopes, labels to pcs, symbols to addresses. sass/ does the same for cuobjdump -sass
listings. Front ends import the IR, isa and base; never the machine, the runtime or anything above."""
