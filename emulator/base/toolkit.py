"""Where NVIDIA's command-line tools (cuobjdump, nvdisasm, ptxas) are: PATH, the CUDA toolkit, or the pip wheels
that carry them (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)."""
from __future__ import annotations

import os
import shutil
import sys
from typing import Optional

#: folders the CUDA 13 and CUDA 12 wheels put their tools in, under site-packages
WHEEL_FOLDERS = (("nvidia", "cu13", "bin"), ("nvidia", "cuda_cuobjdump", "bin"), ("nvidia", "cuda_nvdisasm", "bin"))


def nvidia_tool(name: str) -> Optional[str]:
    """The path of NVIDIA's tool `name`, or None when it is installed nowhere gpuemu looks."""
    found = shutil.which(name)
    if found:
        return found
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    candidates = [os.path.join(root, "bin", name) for root in roots if root]
    candidates += [os.path.join(entry, *folder, name) for entry in sys.path if entry for folder in WHEEL_FOLDERS]
    return next((path for path in candidates if os.path.isfile(path) and os.access(path, os.X_OK)), None)
