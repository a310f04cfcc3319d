"""The SIMT machine: a batch of CTAs with one numpy array per register, per-thread pcs, lowest-pc-first
grouping of a warp's lanes, barriers, calls, and executors that bind each IR instruction to the batch.

It runs what the IR says and calls isa's semantics functions and the memory core; it never reaches up to
the runtime that started it: a launch hands it its configuration, and it reports the end of a launch
(a fault, a deadlock, the step limit) by raising a stop with a snapshot that the runtime renders."""
