"""gpuemu's own tests use its pytest plugin (golden traces, --update-golden) and a parse cache of their own."""
import os
import tempfile

pytest_plugins = ["emulator.pytest_plugin"]

os.environ.setdefault("GPUEMU_CACHE_DIR", tempfile.mkdtemp(prefix="gpuemu-test-cache-"))
