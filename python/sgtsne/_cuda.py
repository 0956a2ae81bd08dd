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

# The libraries in load order (cuSOLVER needs cuBLAS), each with the soname prefix the
# engine asks for.
_LIBRARIES = (
    # NVRTC opens its builtins by name at its first compilation.
    ("NVRTC builtins", "libnvrtc-builtins.so."),
    ("NVRTC", "libnvrtc.so."),
    ("cuBLASLt", "libcublasLt.so."),
    ("cuBLAS", "libcublas.so."),
    ("cuFFT", "libcufft.so."),
    ("cuSOLVER", "libcusolver.so."),
    ("NCCL", "libnccl.so."),
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


def _candidates(prefix: str, dirs: list[Path]) -> list[Path]:
    """Files named ``prefix<major>`` or ``prefix<major>.<minor>`` (the sonames) in
    ``dirs``."""
    found = []
    for d in dirs:
        for f in sorted(d.glob(prefix + "*")):
            if re.fullmatch(r"\d+(\.\d+)?", f.name[len(prefix):]):
                found.append(f)
    return found


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
            for name, prefix in _LIBRARIES:
                for path in _candidates(prefix, dirs):
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
