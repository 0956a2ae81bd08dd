#!/usr/bin/env python3
"""Large AnnData files for the read benchmark (scripts/bench/h5ad.sh) and the sparse PCA
benchmark (scripts/bench/sparse_pca.sh):

    python h5ad_gen.py obsm N OUT.h5ad        # obsm['X_pca'] N × 50 f32, obs cell_type
    python h5ad_gen.py sparse N G DENSITY OUT.h5ad  # X csr N × G f32 counts, DENSITY stored

Seeded. Values do not matter to reading speed; the sparse one has Poisson counts at
random genes, about DENSITY · G per cell, as a 10x count matrix has.

Written by anndata where it is installed; otherwise (the GPU machine has h5py but not
anndata) by h5py in the layout anndata writes (format 0.1/0.2: an `encoding-type` and
`encoding-version` on every element, obs and var data frames with `_index`, a categorical
column as codes and categories), which anndata reads back.
"""
import sys

import numpy as np

rng = np.random.default_rng(0)
kind = sys.argv[1]
n = int(sys.argv[2])
cell_type = rng.integers(0, 20, n)
x = obsm = None
if kind == "obsm":
    obsm = rng.standard_normal((n, 50), dtype=np.float32)
    out = sys.argv[3]
else:
    genes, density, out = int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    per_row = rng.poisson(density * genes, n).clip(1, genes)
    indptr = np.concatenate([[0], np.cumsum(per_row)]).astype(np.int64)
    indices = np.empty(indptr[-1], dtype=np.int32)
    for i in range(n):
        indices[indptr[i]:indptr[i + 1]] = np.sort(rng.choice(genes, per_row[i], replace=False))
    data = (rng.poisson(1.0, indptr[-1]) + 1).astype(np.float32)
    x = (data, indices, indptr, (n, genes))


def with_anndata():
    import anndata as ad
    import pandas as pd
    import scipy.sparse as sp

    obs = pd.DataFrame(
        {"cell_type": pd.Categorical(cell_type.astype(str))},
        index=pd.RangeIndex(n).astype(str),
    )
    if x is None:
        a = ad.AnnData(obs=obs, obsm={"X_pca": obsm})
    else:
        data, indices, indptr, shape = x
        a = ad.AnnData(X=sp.csr_matrix((data, indices, indptr), shape=shape), obs=obs)
    a.write_h5ad(out)
    return a.shape


def with_h5py():
    import h5py

    text = h5py.string_dtype()

    def mark(element, kind, version="0.1.0"):
        element.attrs["encoding-type"] = kind
        element.attrs["encoding-version"] = version

    def frame(group, names, columns):
        mark(group, "dataframe", "0.2.0")
        group.attrs["_index"] = "_index"
        group.attrs.create("column-order", data=np.array(list(columns), dtype=object), dtype=text)
        mark(group.create_dataset("_index", data=np.array(names, dtype=object), dtype=text),
             "string-array", "0.2.0")

    with h5py.File(out, "w") as f:
        mark(f, "anndata")
        obs = f.create_group("obs")
        frame(obs, [str(i) for i in range(n)], ["cell_type"])
        cats = obs.create_group("cell_type")
        mark(cats, "categorical", "0.2.0")
        cats.attrs["ordered"] = False
        names = sorted({str(c) for c in range(20)})
        codes = np.searchsorted(names, cell_type.astype(str)).astype(np.int8)
        mark(cats.create_dataset("codes", data=codes), "array", "0.2.0")
        mark(cats.create_dataset("categories", data=np.array(names, dtype=object), dtype=text),
             "string-array", "0.2.0")
        genes = 0 if x is None else x[3][1]
        frame(f.create_group("var"), [f"g{j}" for j in range(genes)], [])
        for name in ("obsm", "obsp", "varm", "varp", "layers", "uns"):
            mark(f.create_group(name), "dict")
        if x is None:
            mark(f["obsm"].create_dataset("X_pca", data=obsm), "array", "0.2.0")
            return (n, 0)
        data, indices, indptr, shape = x
        g = f.create_group("X")
        mark(g, "csr_matrix")
        g.attrs["shape"] = np.array(shape, dtype=np.int64)
        for name, values in (("data", data), ("indices", indices), ("indptr", indptr)):
            g.create_dataset(name, data=values)
        return shape


try:
    import anndata  # noqa: F401
    shape = with_anndata()
except ImportError:
    shape = with_h5py()
print(out, shape)
