"""The engine's other tools as functions: neighbours, the KL score, what this process can
use."""

from __future__ import annotations

import numpy as np

from . import _common, _cuda
from . import _sgtsne as _ext


def knn(X, k=90, *, method="auto", metric="euclidean", pca=50, backend="auto", n_gpus=None,
        random_state=None, n_jobs=None):
    """Every point's ``k`` nearest other points, found as ``TSNE`` finds them.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The points (converted once to C-contiguous float32 unless they already are).
    k : int, default=90
        Neighbours per point (``TSNE`` uses ``ceil(3 * perplexity)``, 90 at perplexity 30).
    method : {"auto", "exact", "approx", "hnsw"}, default="auto"
        Exact below 500,000 points, approximate (IVF) above, as ``TSNE``.
    metric : {"euclidean", "cosine", "correlation", "inner_product"}, default="euclidean"
    pca : int or None, default=50
        Search among this many principal components when the points have more.
    backend : {"auto", "cpu", "gpu"}, default="auto"
    n_gpus : int or None, default=None
    random_state : int or None, default=None
        Seed of the approximate search (``None`` is 0).
    n_jobs : int or None, default=None
        CPU threads (``None``: every core).

    Returns
    -------
    indices : ndarray of shape (n_samples, k), int64
        Nearest first, the point itself left out.
    distances : ndarray of shape (n_samples, k), float64
        Plain (not squared) distances, in the input's units, after the PCA.
    """
    x = np.ascontiguousarray(X, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {x.shape}")
    params = {
        "knn": method,
        "metric": metric.replace("_", "-"),
        "pca": pca,
        "backend": backend,
        "gpus": n_gpus,
        "seed": _common.seed(random_state),
    }
    _common.ready_for(backend)
    return _ext.knn(x, int(k), params, _common.threads(n_jobs))


def kl_divergence(X, Y, *, perplexity=30.0, affinities="knn", dof=1.0, pca=50, n_jobs=None):
    """KL(P‖Q) of an embedding ``Y`` of the points ``X`` made by any tool.

    P is built from ``X`` as ``TSNE`` builds it (PCA to ``pca`` components, each point's
    ``ceil(3 * perplexity)`` exact nearest neighbours, or every pair with
    ``affinities="exact"``), Q with its exact normalisation: embeddings from different tools
    are scored on equal terms (``sgtsne kl`` on the command line).

    Returns
    -------
    kl : float
    """
    x = np.ascontiguousarray(X, dtype=np.float32)
    y = np.ascontiguousarray(Y, dtype=np.float32)
    if y.ndim == 1:
        y = y.reshape(-1, 1)
    if x.ndim != 2 or y.ndim != 2:
        raise ValueError("X and Y must be 2-D arrays")
    if affinities not in ("knn", "exact"):
        raise ValueError(f"invalid parameter `affinities`: {affinities!r} (knn or exact)")
    return _ext.kl_divergence(x, y, float(perplexity), affinities == "exact", float(dof), pca,
                              _common.threads(n_jobs))


def info(*, compile_kernels=False) -> dict:
    """What this process can use: the version, CPU threads, the GPU (or why there is
    none), NCCL, and the CUDA libraries found inside the Python environment (NVIDIA's pip
    wheels, ``pip install "sgtsne[cuda]"``).

    Parameters
    ----------
    compile_kernels : bool, default=False
        Also compile every CUDA kernel with the NVRTC found (no GPU needed) and say how
        many compiled: a check that the libraries work.

    Returns
    -------
    info : dict
        ``version``, ``cpu_threads``, ``gpu`` (a description or ``None``),
        ``gpu_unavailable`` (the reason, or ``None``), ``backends`` (those usable),
        ``auto`` (what ``backend="auto"`` picks), ``nccl`` (bool), ``cuda_libraries``
        (name → path, from the environment's wheels) and, when asked,
        ``kernels_compiled``.
    """
    libraries = _cuda.preload()
    threads, gpu, reason = _ext.probe()
    out = {
        "version": _ext.__version__,
        "cpu_threads": threads,
        "gpu": gpu,
        "gpu_unavailable": reason,
        "backends": ["cpu", "gpu", "hybrid"] if gpu else ["cpu"],
        "auto": "gpu" if gpu else "cpu",
        "nccl": bool(_ext.nccl_present()),
        "cuda_libraries": libraries,
    }
    if compile_kernels:
        out["kernels_compiled"] = _ext.compile_kernels("sm_90")
    return out
