#!/usr/bin/env python3
"""Large AnnData files for the read benchmark (scripts/bench/h5ad.sh), written by anndata:

    python h5ad_gen.py obsm N OUT.h5ad        # obsm['X_pca'] N × 50 f32, obs cell_type
    python h5ad_gen.py sparse N G DENSITY OUT.h5ad  # X csr N × G f32 counts, DENSITY stored

Seeded. Values do not matter to reading speed; the sparse one has Poisson counts at
random genes, about DENSITY · G per cell, as a 10x count matrix has.
"""
import sys

import anndata as ad
import numpy as np
import pandas as pd
import scipy.sparse as sp

rng = np.random.default_rng(0)
kind = sys.argv[1]
n = int(sys.argv[2])
obs = pd.DataFrame(
    {"cell_type": pd.Categorical(rng.integers(0, 20, n).astype(str))},
    index=pd.RangeIndex(n).astype(str),
)
if kind == "obsm":
    a = ad.AnnData(obs=obs, obsm={"X_pca": rng.standard_normal((n, 50), dtype=np.float32)})
    out = sys.argv[3]
else:
    genes, density, out = int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    per_row = rng.poisson(density * genes, n).clip(1, genes)
    indptr = np.concatenate([[0], np.cumsum(per_row)]).astype(np.int64)
    indices = np.empty(indptr[-1], dtype=np.int32)
    for i in range(n):
        indices[indptr[i]:indptr[i + 1]] = np.sort(rng.choice(genes, per_row[i], replace=False))
    data = (rng.poisson(1.0, indptr[-1]) + 1).astype(np.float32)
    x = sp.csr_matrix((data, indices, indptr), shape=(n, genes))
    a = ad.AnnData(X=x, obs=obs)
a.write_h5ad(out)
print(out, a.shape)
