"""Fixtures of the browser tests: the sgtsne binary, a headless Chromium (the system's,
software WebGL), small maps with known clusters, and a page that fails its test on any
console error."""

import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("SGTSNE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--use-gl=swiftshader",
    "--enable-unsafe-swiftshader",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1000, "height": 700}

# Four clusters of 500 points at the corners of a square, and one point alone at its centre.
CENTRES = {"alpha": (0, 0), "beta": (10, 0), "gamma": (0, 10), "delta": (10, 10)}
PER_CLUSTER = 500
LONE = 4 * PER_CLUSTER


@pytest.fixture(scope="session")
def sgtsne():
    path = Path(os.environ.get("SGTSNE_BIN", REPO / "target" / "release" / "sgtsne"))
    if not path.is_absolute():
        path = REPO / path
    assert path.exists(), f"{path}: no sgtsne binary (build it, or set SGTSNE_BIN)"
    return str(path)


@pytest.fixture(scope="session")
def data(tmp_path_factory):
    """blobs.npy (2-D), labels.csv, meta.csv and blobs3.npy (3-D: the clusters apart on z only)."""
    d = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(7)
    y, labels = [], []
    for name, (cx, cy) in CENTRES.items():
        y.append(rng.normal((cx, cy), 0.6, size=(PER_CLUSTER, 2)))
        labels += [name] * PER_CLUSTER
    y.append(np.array([[5.0, 5.0]]))
    labels.append("lone")
    y = np.vstack(y).astype(np.float32)
    np.save(d / "blobs.npy", y)
    (d / "labels.csv").write_text("label\n" + "\n".join(labels) + "\n")
    rows = [f"{0.5 * i},b{i % 2}" for i in range(len(labels))]
    (d / "meta.csv").write_text("score,batch\n" + "\n".join(rows) + "\n")
    z = np.repeat([0.0, 0.0, 10.0, 10.0], PER_CLUSTER)
    xy = rng.normal(0, 0.6, size=(4 * PER_CLUSTER, 2)) + np.repeat([[0, 0], [10, 0], [0, 0], [10, 0]], PER_CLUSTER, axis=0)
    y3 = np.column_stack([xy, z])
    y3 = np.vstack([y3, [[5.0, 5.0, 5.0]]]).astype(np.float32)
    np.save(d / "blobs3.npy", y3)
    return d


def view(sgtsne, *args):
    subprocess.run([sgtsne, "view", *map(str, args), "--quiet"], check=True)


@pytest.fixture(scope="session")
def blobs_map(sgtsne, data):
    out = data / "blobs.html"
    view(sgtsne, data / "blobs.npy", "--labels", data / "labels.csv", "--meta", data / "meta.csv", "-o", out)
    return out


@pytest.fixture(scope="session")
def browser_context():
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport=VIEWPORT,
            accept_downloads=True,
        )
        yield ctx
        ctx.close()


@pytest.fixture
def page(browser_context):
    """A fresh tab; the test fails if the page logs an error or throws."""
    tab = browser_context.new_page()
    errors = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    yield tab
    tab.close()
    assert not errors, f"console errors: {errors}"
