"""An ``.h5ad`` as scanpy writes it: t-SNE in Python (``sgtsne.tl.tsne``) and on the command
line (``sgtsne embed cells.h5ad``).

    python examples/h5ad_anndata.py [OUT_DIR]        # SGTSNE_BIN=path/to/sgtsne for the CLI part

It makes a small single-cell-like AnnData itself (1,500 cells × 400 genes of sparse counts
from 5 cell types, log-normalised as ``sc.pp.normalize_total`` and ``sc.pp.log1p`` would
leave them), so that it needs anndata only, not scanpy.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anndata as ad
import numpy as np
import pandas as pd
import scipy.sparse as sp

import sgtsne

out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
out.mkdir(parents=True, exist_ok=True)

# --- a small AnnData: counts drawn per cell type, then normalised and log-transformed ---
rng = np.random.default_rng(0)
n_cells, n_genes, n_types = 1500, 400, 5
cell_type = rng.integers(n_types, size=n_cells)
profiles = rng.gamma(0.3, 2.0, size=(n_types, n_genes))  # each type's mean expression
counts = rng.poisson(profiles[cell_type]).astype(np.float32)
X = counts / np.maximum(counts.sum(1, keepdims=True), 1) * 1e4
adata = ad.AnnData(
    X=sp.csr_matrix(np.log1p(X)),
    obs=pd.DataFrame(
        {"cell_type": pd.Categorical([f"type {t}" for t in cell_type])},
        index=[f"cell{i}" for i in range(n_cells)],
    ),
    var=pd.DataFrame(index=[f"gene{j}" for j in range(n_genes)]),
)
path = out / "cells.h5ad"
adata.write_h5ad(path)

# --- Python, scanpy's way: adata.obsm["X_tsne"] ---
adata = ad.read_h5ad(path)
# X has more than 50 genes and no obsm["X_pca"]: the engine reduces the sparse X to 50
# principal components itself (never densified), as scanpy's tl.tsne would.
sgtsne.tl.tsne(adata, backend="cpu", n_jobs=2)
Y = adata.obsm["X_tsne"]
print("tl.tsne:", Y.shape, adata.uns["tsne"]["params"])
adata.write_h5ad(out / "cells_tsne.h5ad")

# --- the command line, on the same file ---
cli = os.environ.get("SGTSNE_BIN")
if cli:
    subprocess.run(
        [cli, "embed", str(path), "--labels", "obs:cell_type", "--backend", "cpu",
         "--threads", "2", "--quiet", "-o", str(out / "cells_cli.h5ad"),
         "--plot", str(out / "cells_cli.png")],
        check=True,
    )
    Y_cli = ad.read_h5ad(out / "cells_cli.h5ad").obsm["X_tsne"]
    print("sgtsne embed:", Y_cli.shape, "in obsm['X_tsne'] of", out / "cells_cli.h5ad")
print(f"h5ad_anndata: wrote {out}")
