"""Shared fixtures: small real data (scikit-learn's digits, shipped with it), blobs, and the
CLI binary for the equality checks."""

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(np.float32), d.target


@pytest.fixture(scope="session")
def blobs():
    """Three well-separated Gaussian clusters of 100 points in 10-D."""
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=20.0, size=(3, 10))
    labels = np.repeat(np.arange(3), 100)
    x = centres[labels] + rng.normal(size=(300, 10))
    return x.astype(np.float32), labels


@pytest.fixture(scope="session")
def cli():
    """The `sgtsne` binary built from this repository (`SGTSNE_BIN`, else
    target/release/sgtsne); the CLI checks are skipped without one unless
    `SGTSNE_REQUIRE_CLI=1`."""
    path = Path(os.environ.get("SGTSNE_BIN", ROOT / "target" / "release" / "sgtsne"))
    if not path.exists():
        if os.environ.get("SGTSNE_REQUIRE_CLI") == "1":
            pytest.fail(f"no sgtsne binary at {path}, and SGTSNE_REQUIRE_CLI=1 requires one")
        pytest.skip(f"no sgtsne binary at {path} (cargo build --release)")
    return str(path)


def gpu_available():
    """Whether a GPU is usable; with `SGTSNE_REQUIRE_GPU=1` a missing one fails."""
    import sgtsne

    info = sgtsne.info()
    if info["gpu"]:
        return True
    if os.environ.get("SGTSNE_REQUIRE_GPU") == "1":
        pytest.fail(f"no usable GPU ({info['gpu_unavailable']}), and SGTSNE_REQUIRE_GPU=1 requires one")
    return False


@pytest.fixture
def gpu():
    if not gpu_available():
        pytest.skip("no usable GPU")
