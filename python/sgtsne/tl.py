"""scanpy's way: ``sgtsne.tl.tsne(adata)`` in place of ``scanpy.tl.tsne(adata)``.

anndata is an optional dependency: only this module needs it, and only an ``AnnData``
passed in.
"""

from __future__ import annotations

import numpy as np

from ._tsne import TSNE

#: Features above which scanpy embeds principal components instead of ``X``.
_N_PCS = 50


def _representation(adata, use_rep, n_pcs):
    """The matrix scanpy's ``tl.tsne`` would embed: ``use_rep`` (``"X"`` or an obsm key),
    else ``X`` when it has at most 50 features or ``n_pcs == 0``, else ``obsm["X_pca"]``
    (its first ``n_pcs`` columns) when present, else ``X`` reduced by the engine's PCA to
    ``n_pcs`` (default 50) components."""
    if use_rep is None:
        if n_pcs == 0 or adata.n_vars <= _N_PCS:
            return adata.X, None
        if "X_pca" in adata.obsm:
            pcs = np.asarray(adata.obsm["X_pca"])
            if n_pcs is not None and n_pcs > pcs.shape[1]:
                raise ValueError(f"n_pcs={n_pcs} is larger than obsm['X_pca']'s {pcs.shape[1]} columns")
            return pcs[:, :n_pcs], None
        return adata.X, n_pcs or _N_PCS
    if use_rep == "X":
        return adata.X, None
    if use_rep not in adata.obsm:
        raise ValueError(
            f"use_rep={use_rep!r} is not 'X' nor a key of obsm (keys: {list(adata.obsm.keys())})"
        )
    rep = adata.obsm[use_rep]
    rep = rep.to_numpy() if hasattr(rep, "to_numpy") else np.asarray(rep)
    return (rep[:, :n_pcs] if n_pcs else rep), None


def tsne(adata, n_pcs=None, *, use_rep=None, perplexity=30, metric="euclidean",
         early_exaggeration=12, learning_rate="auto", random_state=0, n_jobs=None,
         key_added=None, copy=False, **kwargs):
    """t-SNE of an ``AnnData``, as ``scanpy.tl.tsne`` computes it, by the sgtsne engine.

    Parameters
    ----------
    adata : anndata.AnnData
        The annotated data matrix.
    n_pcs : int or None, default=None
        Principal components to use (scanpy's rule: ``obsm["X_pca"]`` when ``X`` has more
        than 50 features).
    use_rep : str or None, default=None
        ``"X"`` or an ``obsm`` key to embed instead.
    perplexity, metric, early_exaggeration, learning_rate, random_state, n_jobs
        As :class:`sgtsne.TSNE` (``learning_rate="auto"``: ``max(n / early_exaggeration,
        50)``).
    key_added : str or None, default=None
        Where to store the result: ``obsm[key_added]`` and ``uns[key_added]``; by default
        ``obsm["X_tsne"]`` and ``uns["tsne"]``.
    copy : bool, default=False
        Work on a copy and return it.
    **kwargs
        Any other :class:`sgtsne.TSNE` parameter (``backend``, ``max_iter``, ``dof``, …).

    Returns
    -------
    The ``AnnData`` copy when ``copy=True``, else ``None``; sets ``obsm["X_tsne"]``
    (n_obs × 2, float32) and ``uns["tsne"]["params"]``.
    """
    adata = adata.copy() if copy else adata
    x, pca = _representation(adata, use_rep, n_pcs)
    if pca is not None:
        kwargs.setdefault("pca", pca)
    model = TSNE(
        perplexity=perplexity,
        metric=metric,
        early_exaggeration=early_exaggeration,
        learning_rate=learning_rate,
        random_state=random_state,
        n_jobs=n_jobs,
        **kwargs,
    )
    embedding = model.fit_transform(x)
    key_obsm, key_uns = ("X_tsne", "tsne") if key_added is None else (key_added, key_added)
    adata.obsm[key_obsm] = embedding
    params = {
        "perplexity": perplexity,
        "early_exaggeration": early_exaggeration,
        "learning_rate": learning_rate,
        "n_jobs": n_jobs,
        "metric": metric,
    }
    if use_rep is not None:
        params["use_rep"] = use_rep
    if n_pcs is not None:
        params["n_pcs"] = n_pcs
    adata.uns[key_uns] = {"params": params}
    return adata if copy else None
