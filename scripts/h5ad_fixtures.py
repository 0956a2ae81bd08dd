#!/usr/bin/env python3
"""Writes the small AnnData fixtures under tests/data/h5ad/ with the real `anndata` package.

    python3 -m venv /tmp/ad && /tmp/ad/bin/pip install anndata
    /tmp/ad/bin/python scripts/h5ad_fixtures.py [OUT_DIR]

One matrix of 300 points in four blobs × 20 features, stored the ways anndata stores it:

  dense_gzip.h5ad  X dense f32, chunked and gzip-compressed; obsm X_pca (f64); uns entry;
                   obsp distances: the 30 nearest neighbours of each point in X (Euclidean,
                   self not stored), as scanpy's sc.pp.neighbors writes them
  csr.h5ad         X as a csr_matrix group (f32), gzip
  csc.h5ad         X as a csc_matrix group (f64)
  counts.h5ad      X dense int32 (rounded |X|); obs with a missing category and a bool column
  no_x.h5ad        no X, only obsm X_pca

obs of each: cell_type (categorical of strings), batch (int64), donor (strings). Seeded: the
same files every time (up to anndata's own metadata).
"""
import sys
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import scipy.sparse as sp

out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/h5ad")
out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(7)
n, d = 300, 20
label = rng.integers(0, 4, n)
centres = rng.normal(size=(4, d)) * 5
x = (centres[label] + rng.normal(size=(n, d))).astype(np.float32)
# Sparse as expression data: small values are zeros.
x[np.abs(x) < 1.5] = 0
names = np.array(["B cell", "T cell", "NK", "Monocyte"])
obs = pd.DataFrame(
    {
        "cell_type": pd.Categorical(names[label]),
        "batch": rng.integers(0, 3, n),
        "donor": [f"donor{i % 5}" for i in range(n)],
    },
    index=[f"cell{i}" for i in range(n)],
)
pca = rng.normal(size=(n, 5))

a = ad.AnnData(X=x, obs=obs)
a.obsm["X_pca"] = pca
sq = ((x[:, None, :].astype(np.float64) - x[None, :, :]) ** 2).sum(-1)
np.fill_diagonal(sq, np.inf)
nearest = np.argsort(sq, axis=1, kind="stable")[:, :30]
rows = np.repeat(np.arange(n), 30)
a.obsp["distances"] = sp.csr_matrix(
    (np.sqrt(sq[rows, nearest.ravel()]), (rows, nearest.ravel())), shape=(n, n)
)
a.uns["note"] = "kept as written"
a.write_h5ad(out / "dense_gzip.h5ad", compression="gzip")
ad.AnnData(X=sp.csr_matrix(x), obs=obs).write_h5ad(out / "csr.h5ad", compression="gzip")
ad.AnnData(X=sp.csc_matrix(x.astype(np.float64)), obs=obs).write_h5ad(out / "csc.h5ad")

counts_obs = obs.copy()
cell_type = counts_obs["cell_type"].astype(object)
cell_type.iloc[:3] = np.nan
counts_obs["cell_type"] = pd.Categorical(cell_type)
counts_obs["stimulated"] = label % 2 == 0
ad.AnnData(X=np.rint(np.abs(x)).astype(np.int32), obs=counts_obs).write_h5ad(out / "counts.h5ad")

ad.AnnData(obs=obs, obsm={"X_pca": pca}).write_h5ad(out / "no_x.h5ad")
for f in sorted(out.glob("*.h5ad")):
    print(f, f.stat().st_size, "bytes")
