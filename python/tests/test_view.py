"""sgtsne.view: the interactive map from Python (the page itself is tested in a browser by
tests/browser)."""

import numpy as np
import pytest

import sgtsne


def test_a_map_file_and_the_notebook_view(blobs, tmp_path):
    x, labels = blobs
    y = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter=250).fit(x)
    out = sgtsne.view(y, labels, meta={"score": np.linspace(0, 1, 300)}, path=tmp_path / "m.html",
                      title="three blobs")
    page = out.read_text()
    assert out == tmp_path / "m.html"
    assert "three blobs" in page and "<script" in page and "http" not in page.split("<script")[0]
    m = sgtsne.view(y.embedding_, [f"c{v}" for v in labels])
    html = m._repr_html_()
    assert html.startswith("<iframe srcdoc=") and "&lt;script" in html
    assert len(m.html) < 7 * 300 + 200_000


def test_bad_maps_raise_and_write_nothing(blobs, tmp_path):
    y = np.random.default_rng(0).normal(size=(300, 2)).astype(np.float32)
    target = tmp_path / "m.html"
    with pytest.raises(ValueError, match="10 values for 300 points"):
        sgtsne.view(y, np.arange(10), path=target)
    bad = y.copy()
    bad[7, 1] = np.nan
    with pytest.raises(ValueError, match="row 8"):
        sgtsne.view(bad, path=target)
    with pytest.raises(ValueError, match="1, 2 or 3"):
        sgtsne.view(np.zeros((5, 4), np.float32), path=target)
    assert not target.exists()
