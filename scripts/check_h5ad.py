#!/usr/bin/env python3
"""Checks an .h5ad that `sgtsne embed` wrote against its input, with the real `anndata`:

    python scripts/check_h5ad.py INPUT.h5ad OUTPUT.h5ad KEY DIMS

OUTPUT must open with anndata.read_h5ad, hold obsm[KEY] of shape (n_obs, DIMS), finite, and
be equal to INPUT in everything else (X dense or sparse, obs, var, uns, the other obsm
entries, layers, obsp). Prints "ok" and exits 0, or says what differs and exits 1.
"""
import sys

import anndata as ad
import numpy as np
import scipy.sparse as sp

src_path, out_path, key, dims = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
src = ad.read_h5ad(src_path)
out = ad.read_h5ad(out_path)
problems = []


def same(a, b):
    if a is None or b is None:
        return a is None and b is None
    if sp.issparse(a) or sp.issparse(b):
        return sp.issparse(a) and sp.issparse(b) and a.format == b.format and (a != b).nnz == 0
    return np.array_equal(np.asarray(a), np.asarray(b))


y = out.obsm.get(key)
if y is None:
    problems.append(f"no obsm['{key}']")
elif y.shape != (src.n_obs, dims) or not np.all(np.isfinite(y)):
    problems.append(f"obsm['{key}'] has shape {y.shape}, expected {(src.n_obs, dims)}, or non-finite values")
if not same(src.X, out.X):
    problems.append("X differs")
if not src.obs.equals(out.obs):
    problems.append("obs differs")
if not src.var.equals(out.var):
    problems.append("var differs")
if set(out.obsm.keys()) != set(src.obsm.keys()) | {key}:
    problems.append(f"obsm keys {sorted(out.obsm.keys())} against {sorted(src.obsm.keys())}")
for k in src.obsm.keys():
    if k != key and not same(src.obsm[k], out.obsm[k]):
        problems.append(f"obsm['{k}'] differs")
if repr(dict(src.uns)) != repr(dict(out.uns)):
    problems.append("uns differs")
for name in ("layers", "obsp", "varm", "varp"):
    a, b = getattr(src, name), getattr(out, name)
    if set(a.keys()) != set(b.keys()) or any(not same(a[k], b[k]) for k in a.keys()):
        problems.append(f"{name} differs")
if problems:
    print("; ".join(problems))
    sys.exit(1)
print("ok")
