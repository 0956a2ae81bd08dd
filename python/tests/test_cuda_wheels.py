"""NVIDIA's CUDA pip wheels (`pip install "sgtsne[cuda]"`): found inside the environment,
and the kernels compile with their NVRTC (no GPU needed). Runs wherever the wheels are
installed; `SGTSNE_REQUIRE_CUDA_WHEELS=1` makes their absence a failure."""

import os
import sys
from importlib import util
from pathlib import Path

import pytest

import sgtsne


def wheels_installed():
    if util.find_spec("nvidia") is not None:
        return True
    if os.environ.get("SGTSNE_REQUIRE_CUDA_WHEELS") == "1":
        pytest.fail("no nvidia wheels, and SGTSNE_REQUIRE_CUDA_WHEELS=1 requires them")
    return False


def test_the_libraries_are_found_inside_the_environment_and_compile_the_kernels():
    if not wheels_installed():
        pytest.skip("NVIDIA's CUDA wheels are not installed (pip install 'sgtsne[cuda]')")
    info = sgtsne.info(compile_kernels=True)
    prefix = Path(sys.prefix).resolve()
    found = info["cuda_libraries"]
    for name in ("NVRTC", "cuFFT", "cuBLAS", "cuSOLVER"):
        assert name in found, f"{name} not found among {found}"
        assert Path(found[name]).resolve().is_relative_to(prefix), found[name]
    assert info["kernels_compiled"] > 10
