"""Observers: what subscribes to the machine's one event hook (emulator.machine.observe) - exact memory
statistics, compute-sanitizer style checkers, deterministic traces, profiles. They never import a front door."""
