"""`python -m emulator` is the `gpuemu` command."""
from .cli import entry

entry()
