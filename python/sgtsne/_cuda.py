"""NVIDIA's CUDA libraries from pip wheels, found inside the Python environment.

``pip install "sgtsne[cuda]"`` installs NVIDIA's own wheels of the libraries the engine
loads at run time (NVRTC, cuFFT, cuBLAS, cuSOLVER, NCCL). They unpack under
``site-packages/nvidia/``, where the dynamic loader does not look. Before the first GPU
call, :func:`preload` finds them there, once per process, and hands their paths to the
engine, which loads each by its path only when a stage first needs it (cuBLAS and its
150 MiB of resident memory only for a PCA, say); the engine then finds it by its usual
name. The CUDA driver (``libcuda``) comes with the NVIDIA driver, never from pip.
"""

from __future__ import annotations

import os
import re
import threading
from importlib import util
from pathlib import Path

# The files by the sonames of the CUDA 13 family the engine is built for (the wheels of
# other CUDA versions, e.g. cu12 ones that another package pulled in, are left alone),
# each with the engine's library it belongs to; a library's files in load order.
_LIBRARIES = (
    # NVRTC opens its builtins by name at its first compilation.
    ("NVRTC builtins", r"libnvrtc-builtins\.so\.13\.\d+", "NVRTC"),
    ("NVRTC", r"libnvrtc\.so\.13", "NVRTC"),
    ("cuBLASLt", r"libcublasLt\.so\.13", "cuBLAS"),
    ("cuBLAS", r"libcublas\.so\.13", "cuBLAS"),
    ("cuFFT", r"libcufft\.so\.12", "cuFFT"),
    ("cuSOLVER", r"libcusolver\.so\.12", "cuSOLVER"),
    ("NCCL", r"libnccl\.so\.2", "NCCL"),
)

_lock = threading.Lock()
_found: dict[str, str] | None = None


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
    """Finds the CUDA libraries of NVIDIA's pip wheels and registers them with the engine,
    once per process; nothing is loaded until a stage needs it.

    Returns the libraries found, by name, with their paths. A library without a wheel is
    left to the system's loader (a CUDA toolkit on ``LD_LIBRARY_PATH``). Setting
    ``SGTSNE_NO_PIP_CUDA=1`` skips the wheels altogether.
    """
    global _found
    with _lock:
        if _found is not None:
            return dict(_found)
        found: dict[str, str] = {}
        files: dict[str, list[str]] = {}
        if os.environ.get("SGTSNE_NO_PIP_CUDA") != "1":
            dirs = _library_dirs()
            for name, soname, library in _LIBRARIES:
                paths = _candidates(soname, dirs)
                if paths:
                    found[name] = str(paths[0])
                    files.setdefault(library, []).append(str(paths[0]))
            if "NCCL" in found:
                _link_nccl(Path(found["NCCL"]))
            from . import _sgtsne

            for library, paths in files.items():
                _sgtsne.register_cuda_library(library, paths)
        _found = found
        return dict(found)


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
