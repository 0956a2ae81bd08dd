"""Inputs as the engine takes them: dense rows as C-contiguous float32 (read in place when
they already are; converted once otherwise), sparse rows as CSR, and neighbour lists as a
CSR triple."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def dense_f32(x) -> np.ndarray:
    """``x`` as a C-contiguous float32 2-D array, without a copy when it already is one."""
    return np.ascontiguousarray(x, dtype=np.float32)


def sparse_rows(x) -> tuple:
    """A scipy sparse matrix as ``(n, d, indptr, indices, data)`` of CSR (CSC converted)."""
    csr = sp.csr_matrix(x)
    n, d = csr.shape
    return (
        int(n),
        int(d),
        np.ascontiguousarray(csr.indptr, dtype=np.int64),
        np.ascontiguousarray(csr.indices, dtype=np.int64),
        np.ascontiguousarray(csr.data, dtype=np.float32),
    )


def neighbor_lists(neighbors, n: int) -> tuple:
    """Neighbours given as ``(indices, distances)`` (n × k arrays, scikit-learn's
    ``kneighbors``; −1 marks an absent neighbour) or as a sparse n × n distance graph
    (scikit-learn's ``kneighbors_graph(mode="distance")``, scanpy's
    ``obsp["distances"]``), as the CSR triple ``(n, indptr, indices, distances)``."""
    if sp.issparse(neighbors):
        g = sp.csr_matrix(neighbors)
        if g.shape != (n, n):
            raise ValueError(
                f"neighbors: the distance graph is {g.shape[0]} × {g.shape[1]}; "
                f"{n} × {n} expected"
            )
        return (
            n,
            np.ascontiguousarray(g.indptr, dtype=np.int64),
            np.ascontiguousarray(g.indices, dtype=np.int64),
            np.ascontiguousarray(g.data, dtype=np.float64),
        )
    try:
        indices, distances = neighbors
    except (TypeError, ValueError):
        raise ValueError(
            "neighbors must be 'auto', 'exact', 'approx', 'hnsw', a pair (indices, "
            "distances) of n × k arrays, or a sparse n × n distance graph"
        ) from None
    indices = np.asarray(indices)
    distances = np.asarray(distances, dtype=np.float64)
    if indices.ndim != 2 or indices.shape != distances.shape:
        raise ValueError(
            f"neighbors: indices {indices.shape} and distances {distances.shape} must be "
            "two n × k arrays of one shape"
        )
    if indices.shape[0] != n:
        raise ValueError(
            f"neighbors: {indices.shape[0]} rows of neighbours, but the points are {n}: "
            "the kNN was computed for other data"
        )
    if not np.issubdtype(indices.dtype, np.integer):
        raise ValueError("neighbors: the indices must be an integer array")
    k = indices.shape[1]
    return (
        n,
        np.arange(0, n * k + 1, k, dtype=np.int64),
        np.ascontiguousarray(indices, dtype=np.int64).ravel(),
        np.ascontiguousarray(distances).ravel(),
    )


def distance_matrix_lists(d: np.ndarray, k: int) -> tuple:
    """A dense n × n distance matrix (``metric="precomputed"``) as each row's ``k`` nearest
    other points, the CSR triple of :func:`neighbor_lists`."""
    d = np.asarray(d, dtype=np.float64)
    n = d.shape[0]
    if d.ndim != 2 or d.shape[1] != n:
        raise ValueError(f"a precomputed distance matrix must be square, got {d.shape}")
    if (d < 0).any():
        raise ValueError("a precomputed distance matrix must not hold negative values")
    k = min(k, n - 1)
    masked = d.copy()
    np.fill_diagonal(masked, np.inf)
    nearest = np.argpartition(masked, k - 1, axis=1)[:, :k] if k > 0 else np.empty((n, 0), int)
    dist = np.take_along_axis(d, nearest, axis=1)
    return neighbor_lists((nearest, dist), n)


def label_codes(labels, n: int):
    """Labels as ``(codes, names)`` for the report's 10-NN accuracy, or ``None`` when they
    are not one label per point."""
    try:
        y = np.asarray(labels)
    except Exception:
        return None
    if y.ndim != 1 or y.shape[0] != n:
        return None
    try:
        names, codes = np.unique(y, return_inverse=True)
    except TypeError:
        return None
    return np.ascontiguousarray(codes, dtype=np.uint32), [str(v) for v in names]
