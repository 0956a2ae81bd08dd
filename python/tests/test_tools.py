"""knn, kl_divergence, info and the scanpy way."""

import subprocess

import numpy as np
import pytest

import sgtsne


def test_knn_matches_scikit_learn(blobs):
    from sklearn.neighbors import NearestNeighbors

    x, _ = blobs
    idx, dist = sgtsne.knn(x, 15, method="exact", backend="cpu")
    assert idx.shape == dist.shape == (300, 15) and idx.dtype == np.int64
    d, i = NearestNeighbors(n_neighbors=15).fit(x).kneighbors()
    np.testing.assert_allclose(dist, d, rtol=1e-4)
    assert (np.sort(idx, axis=1) == np.sort(i, axis=1)).mean() > 0.99
    with pytest.raises(ValueError, match="k"):
        sgtsne.knn(x, 2)


def test_kl_divergence_scores_any_embedding_as_the_cli_does(digits, cli, tmp_path):
    x, labels = digits
    model = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter=500)
    y = model.fit_transform(x)
    kl = sgtsne.kl_divergence(x, y)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    out = subprocess.run([cli, "kl", str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                         check=True, capture_output=True, text=True).stdout
    assert kl == pytest.approx(float(out), abs=1e-6)
    # A random embedding scores worse.
    noise = np.random.default_rng(0).normal(size=y.shape).astype(np.float32)
    assert sgtsne.kl_divergence(x, noise) > kl + 1
    with pytest.raises(ValueError, match="rows"):
        sgtsne.kl_divergence(x, y[:10])


def test_info_says_what_this_process_can_use():
    info = sgtsne.info()
    assert info["version"] == sgtsne.__version__
    assert info["cpu_threads"] >= 1
    assert "cpu" in info["backends"]
    assert (info["gpu"] is None) == (info["gpu_unavailable"] is not None)
    assert info["auto"] in info["backends"]


def test_scanpy_way_on_an_anndata(digits):
    ad = pytest.importorskip("anndata")
    x, labels = digits
    adata = ad.AnnData(x)
    adata.obs["digit"] = labels.astype(str)
    assert sgtsne.tl.tsne(adata, backend="cpu", n_jobs=2, max_iter=300) is None
    y = adata.obsm["X_tsne"]
    assert y.shape == (x.shape[0], 2)
    assert adata.uns["tsne"]["params"]["perplexity"] == 30
    # copy=True leaves the original alone; key_added names the result; use_rep picks obsm.
    adata.obsm["X_small"] = x[:, :10]
    out = sgtsne.tl.tsne(adata, use_rep="X_small", key_added="small", copy=True,
                         backend="cpu", n_jobs=2, max_iter=200)
    assert "small" in out.obsm and "small" not in adata.obsm
    assert out.uns["small"]["params"]["use_rep"] == "X_small"
    with pytest.raises(ValueError, match="obsm"):
        sgtsne.tl.tsne(adata, use_rep="X_missing")
    # More than 50 features and an X_pca: scanpy's rule embeds the principal components.
    wide = ad.AnnData(np.hstack([x, x[:, :10]]))
    wide.obsm["X_pca"] = x[:, :20]
    sgtsne.tl.tsne(wide, n_pcs=5, backend="cpu", n_jobs=2, max_iter=200, random_state=1)
    direct = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter=200, random_state=1).fit_transform(x[:, :5])
    np.testing.assert_array_equal(wide.obsm["X_tsne"], direct)
