"""`python -m emulator` is the `gpuemu` command."""
from emulator.cli import entry

entry()
