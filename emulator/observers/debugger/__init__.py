"""The debugger's core, shared by its front ends (the REPL in emulator/debug, the DAP server): the launch under
control (control.py), its recorded history (record.py), the paused machine (state.py), expressions (expr.py),
C-level variables from -G's DWARF (dwarf.py, variables.py), locations and frames (symbols.py) and the session
that ties them together (session.py). Nothing here prints: the front ends say what happened."""
