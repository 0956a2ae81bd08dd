"""NVIDIA's CUDA libraries from pip wheels, found inside the Python environment.

``pip install "sgtsne[cuda]"`` installs NVIDIA's own wheels of the libraries the engine
loads at run time (NVRTC, cuFFT, cuBLAS, cuSOLVER, NCCL). They unpack under
``site-packages/nvidia/``, where the dynamic loader does not look. Before the first GPU
call, :func:`preload` loads them by their full paths, once per process; the engine then
finds each by its usual name (the loader matches a library already loaded by its soname).
The CUDA driver (``libcuda``) comes with the NVIDIA driver, never from pip.
"""

from __future__ import annotations

import ctypes
import os
import re
import threading
from importlib import util
from pathlib import Path

# The libraries in load order (cuSOLVER needs cuBLAS), each by the sonames of the CUDA 13
# family the engine is built for; the wheels of other CUDA versions (e.g. cu12 ones that
# another package pulled in) are left alone.
_LIBRARIES = (
    # NVRTC opens its builtins by name at its first compilation.
    ("NVRTC builtins", r"libnvrtc-builtins\.so\.13\.\d+"),
    ("NVRTC", r"libnvrtc\.so\.13"),
    ("cuBLASLt", r"libcublasLt\.so\.13"),
    ("cuBLAS", r"libcublas\.so\.13"),
    ("cuFFT", r"libcufft\.so\.12"),
    ("cuSOLVER", r"libcusolver\.so\.12"),
    ("NCCL", r"libnccl\.so\.2"),
)

_lock = threading.Lock()
_loaded: dict[str, str] | None = None


def _library_dirs() -> list[Path]:
    """The ``lib`` folders of the ``nvidia`` wheels installed in this environment."""
    spec = util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    dirs = []
    for root in spec.submodule_search_locations:
        for lib in sorted(Path(root).glob("*/lib")):
            if lib.is_dir():
                dirs.append(lib)
    return dirs


def _candidates(soname: str, dirs: list[Path]) -> list[Path]:
    """Files in ``dirs`` whose whole name matches the pattern ``soname``."""
    return [f for d in dirs for f in sorted(d.iterdir()) if re.fullmatch(soname, f.name)]


def preload() -> dict[str, str]:
    """Loads the CUDA libraries of NVIDIA's pip wheels, once per process.

    Returns the libraries found, by name, with their paths. A library without a wheel is
    left to the system's loader (a CUDA toolkit on ``LD_LIBRARY_PATH``). Setting
    ``SGTSNE_NO_PIP_CUDA=1`` skips the wheels altogether.
    """
    global _loaded
    with _lock:
        if _loaded is not None:
            return dict(_loaded)
        loaded: dict[str, str] = {}
        if os.environ.get("SGTSNE_NO_PIP_CUDA") != "1":
            dirs = _library_dirs()
            for name, soname in _LIBRARIES:
                for path in _candidates(soname, dirs):
                    try:
                        ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                    except OSError:
                        continue
                    loaded[name] = str(path)
                    break
            if "NCCL" in loaded:
                _link_nccl(Path(loaded["NCCL"]))
        _loaded = loaded
        return dict(loaded)


def _link_nccl(path: Path) -> None:
    """The engine opens NCCL as ``libnccl.so``, which NVIDIA's wheel does not ship (only
    ``libnccl.so.2``); where the wheel's folder is writable, a link of that name is added
    beside it, for the extension's run path to find."""
    link = path.parent / "libnccl.so"
    if link.exists():
        return
    try:
        link.symlink_to(path.name)
    except OSError:
        pass
