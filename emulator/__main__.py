"""`python -m emulator` is the `gpuemu` command."""
import sys

from .cli import main

sys.exit(main())
