"""``sgtsne.TSNE``: scikit-learn's estimator over the engine's ``embed`` and ``transform``."""

from __future__ import annotations

import json
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _common, _input
from . import _sgtsne as _ext

_NEIGHBOR_METHODS = ("auto", "exact", "approx", "hnsw")


class TSNE(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """t-SNE embedding at the million-point scale, on the CPU or a GPU.

    The parameters carry scikit-learn's :class:`sklearn.manifold.TSNE` names where one
    exists, and every default is what ``sgtsne embed`` does. See the guide's page on
    choosing parameters (``docs/parameters.md``) for when to change them.

    Parameters
    ----------
    n_components : int, default=2
        Dimension of the embedding: 1, 2 or 3.
    perplexity : float or sequence of float, default=30.0
        Effective number of neighbours each point attends to; each point's
        ``ceil(3 * perplexity)`` nearest neighbours carry its affinities. A rising sequence
        (e.g. ``(30, 300)``) averages several scales (multiscale t-SNE).
    early_exaggeration : float, default=12.0
        Factor on the attraction during the early phase, which lets clusters form.
    learning_rate : float or "auto", default="auto"
        Step size; ``"auto"`` is ``max(n / early_exaggeration, 50)``.
    max_iter : int or "auto", default=1000
        Gradient steps, the early phase included. ``"auto"`` runs until the map has
        settled (its sampled neighbourhoods and the KL stop changing over the last tenth of
        the run), at most ``iters_cap`` steps; ``report_["optimise"]["auto_stop"]`` says
        why it stopped. A run that stops while its map is still changing issues a
        ``UserWarning`` saying so: large data sets need more than the default.
    iters_cap : int, default=10000
        With ``max_iter="auto"``, the most steps.
    metric : {"euclidean", "cosine", "correlation", "inner_product", "precomputed"}, default="euclidean"
        Distance between points. With ``"precomputed"``, ``X`` is a sparse n × n distance
        graph of each point's nearest neighbours (scikit-learn's
        ``kneighbors_graph(mode="distance")``) or a dense n × n distance matrix.
    init : {"pca", "random"} or ndarray of shape (n_samples, n_components), default="pca"
        Start: the top principal components scaled to std 1e-4, a seeded Gaussian, or the
        given coordinates (used as given; see ``init_rescale``).
    random_state : int, RandomState or None, default=None
        Seed of every random choice; ``None`` is 0, as the CLI, so that runs repeat.
    n_jobs : int or None, default=None
        CPU threads; ``None`` or ``-1`` uses every core.
    verbose : bool, default=False
        Print each stage, the KL as it falls and the run's summary to ``sys.stderr``.
    backend : {"auto", "cpu", "gpu", "hybrid"}, default="auto"
        Where the work runs; ``"auto"`` takes the GPU when one is usable
        (:func:`sgtsne.info` says whether, and why not).
    n_gpus : int or None, default=None
        GPUs of the ``gpu`` backend; ``None`` uses all from a million points, one below.
    dof : float, default=1.0
        Degrees of freedom of the embedding's Student-t kernel; below 1 gives heavier
        tails, which pull clusters apart.
    exaggeration : float, default=1.0
        Factor on the attraction after the early phase.
    early_exaggeration_iter : int, default=250
        Steps of the early phase.
    early_momentum : float, default=0.5
        Momentum during the early phase.
    momentum : float or None, default=None
        Momentum after the early phase; ``None`` is 0.8, or 0.9 with ``max_iter="auto"``
        (which converges in fewer steps).
    coarse_boost : float or None, default=None
        The coarse step after the early phase: each point's gradient plus this times the
        mean gradient of its ``coarse_cell`` of the map, so that regions which move together
        move faster. ``None`` is 0 (off), or 3 with ``max_iter="auto"``, where a converged
        map comes in far fewer steps (1.3M points: 1800 against 4550).
    coarse_cell : float, default=20.0
        The side of the coarse step's cells, in embedding units.
    coarse_delay : int or None, default=None
        Steps after the early phase before the coarse step begins; ``None`` is 0, or 150
        with ``max_iter="auto"`` below 2**20 points. Just after the early phase the map
        expands out of its clusters, and a coarse step there mixes the edges of
        neighbouring clusters (a lower 10-NN accuracy); raise it if the classes of a
        converged map look frayed.
    neighbors : {"auto", "exact", "approx", "hnsw"} or (indices, distances) or sparse matrix, default="auto"
        How the nearest neighbours are found, or the neighbours themselves: two n × k arrays
        (scikit-learn's ``kneighbors``; −1 marks an absent one) or a sparse n × n distance
        graph, computed elsewhere for the same points.
    max_neighbors : int, default=1000
        Most neighbours per point, whatever the perplexity.
    pca : int or None, default=50
        Reduce the points to this many principal components first when they have more;
        ``None`` keeps every feature.
    order : {"auto", "locality", "cells", "input"}, default="auto"
        The engine's internal numbering of the points (speed only; the result comes back
        in input order).
    grid : int, "auto", "fixed" or None, default=None
        The repulsion's interpolation grid: nodes per axis, or how it is sized; ``None``
        the engine's default for the dimension.
    grid_spacing, grid_error : float or None, default=None
        An adaptive grid's node spacing, or the repulsion's relative force error to size
        the grid for.
    grid_max_nodes : int or None, default=None
        The most nodes of an adaptive grid, past which its spacing grows; ``None`` the
        engine's: 2048² in 2-D and 160³ in 3-D, or where fewer, 4 a point in 3-D on the
        GPU, and with ``max_iter="auto"`` in 1-D and 2-D 2 a point on the GPU and 4 on the
        CPU, the near field keeping the accuracy.
    repulsion : {"fft", "exact"}, default="fft"
        FFT-interpolated repulsion, or exact O(n²) sums (small n only).
    near_field : {"auto", "on", "off"}, default="auto"
        Exact repulsion between close points beside the grid (on in 3-D on one GPU, and
        with ``max_iter="auto"``'s grid budget).
    precision : {"f32", "f64"}, default="f32"
        Precision of the repulsion's grids.
    max_step_norm : float or None, default=5.0
        Each point's step is capped at this length; ``None`` for no cap.
    deterministic : bool, default=False
        On the GPU, sum forces in fixed point so that runs repeat bit for bit (CPU runs
        always do).
    affinities : {"knn", "exact"}, default="knn"
        Affinities over each point's nearest neighbours, or over every pair (exact t-SNE;
        memory grows as n²).
    init_rescale : bool, default=False
        With ``init`` an array: scale it to std 1e-4 on its first axis.
    callbacks : callable or list of callables, default=None
        Called as ``callback(iteration, kl, embedding)`` every ``callbacks_every_iters``
        steps (``embedding`` a copy, n × n_components); returning ``True`` stops the run
        with the embedding reached (openTSNE's callbacks).
    callbacks_every_iters : int, default=50
        Steps between two calls of the callbacks.
    keep_map : bool, default=False
        Keep what :meth:`transform` needs, as ``sgtsne embed --save-model`` does: the
        points as searched (the caller's float32 array itself when no PCA or metric changed
        it, else n × min(d, pca) floats), and, for a PCA, its basis fitted on the host.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components), float32
        The embedding.
    kl_divergence_ : float
        KL(P‖Q) of the final embedding.
    n_iter_ : int
        Steps run (fewer than ``max_iter`` when a callback stopped the run; with
        ``max_iter="auto"``, where the run found its map settled).
    learning_rate_ : float
        The learning rate used (``"auto"`` resolved).
    n_features_in_ : int
        Features seen in ``fit``.
    feature_names_in_ : ndarray of str
        Column names of a DataFrame given to ``fit``.
    report_ : dict
        The run report, as ``sgtsne embed --report`` writes it: parameters, seconds per
        stage, KL history, kNN recall, quality measures, device.

    Examples
    --------
    >>> import numpy as np, sgtsne
    >>> X = np.random.default_rng(0).normal(size=(500, 20)).astype(np.float32)
    >>> Y = sgtsne.TSNE(backend="cpu", n_jobs=2).fit_transform(X)
    >>> Y.shape
    (500, 2)
    """

    def __init__(
        self,
        n_components=2,
        *,
        perplexity=30.0,
        early_exaggeration=12.0,
        learning_rate="auto",
        max_iter=1000,
        iters_cap=10000,
        metric="euclidean",
        init="pca",
        random_state=None,
        n_jobs=None,
        verbose=False,
        backend="auto",
        n_gpus=None,
        dof=1.0,
        exaggeration=1.0,
        early_exaggeration_iter=250,
        early_momentum=0.5,
        momentum=None,
        coarse_boost=None,
        coarse_cell=20.0,
        coarse_delay=None,
        neighbors="auto",
        max_neighbors=1000,
        pca=50,
        order="auto",
        grid=None,
        grid_spacing=None,
        grid_error=None,
        grid_max_nodes=None,
        repulsion="fft",
        near_field="auto",
        precision="f32",
        max_step_norm=5.0,
        deterministic=False,
        affinities="knn",
        init_rescale=False,
        callbacks=None,
        callbacks_every_iters=50,
        keep_map=False,
    ):
        self.n_components = n_components
        self.perplexity = perplexity
        self.early_exaggeration = early_exaggeration
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.iters_cap = iters_cap
        self.metric = metric
        self.init = init
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.backend = backend
        self.n_gpus = n_gpus
        self.dof = dof
        self.exaggeration = exaggeration
        self.early_exaggeration_iter = early_exaggeration_iter
        self.early_momentum = early_momentum
        self.momentum = momentum
        self.coarse_boost = coarse_boost
        self.coarse_cell = coarse_cell
        self.coarse_delay = coarse_delay
        self.neighbors = neighbors
        self.max_neighbors = max_neighbors
        self.pca = pca
        self.order = order
        self.grid = grid
        self.grid_spacing = grid_spacing
        self.grid_error = grid_error
        self.grid_max_nodes = grid_max_nodes
        self.repulsion = repulsion
        self.near_field = near_field
        self.precision = precision
        self.max_step_norm = max_step_norm
        self.deterministic = deterministic
        self.affinities = affinities
        self.init_rescale = init_rescale
        self.callbacks = callbacks
        self.callbacks_every_iters = callbacks_every_iters
        self.keep_map = keep_map

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        tags.input_tags.sparse = True
        return tags

    # -- the engine's parameters ------------------------------------------------------------

    def _engine_params(self) -> dict:
        """The parameters under the engine's names (``sgtsne embed``'s flags)."""
        perplexity = self.perplexity
        if isinstance(perplexity, Real):
            perplexity = [float(perplexity)]
        else:
            perplexity = [float(u) for u in perplexity]
        learning_rate = self.learning_rate
        if isinstance(learning_rate, str):
            if learning_rate != "auto":
                raise ValueError(
                    f"invalid parameter `learning_rate`: {learning_rate!r} (a number or 'auto')"
                )
            learning_rate = None
        if not isinstance(self.n_components, Integral):
            raise ValueError(f"invalid parameter `n_components`: {self.n_components!r}")
        auto_iters = isinstance(self.max_iter, str) and self.max_iter == "auto"
        if not auto_iters and (not isinstance(self.max_iter, Integral) or self.max_iter < 0):
            raise ValueError(f"invalid parameter `max_iter`: {self.max_iter!r} (a count or 'auto')")
        if not isinstance(self.iters_cap, Integral) or self.iters_cap < 1:
            raise ValueError(f"invalid parameter `iters_cap`: {self.iters_cap!r}")
        knn = self.neighbors if isinstance(self.neighbors, str) else "auto"
        if knn not in _NEIGHBOR_METHODS:
            raise ValueError(
                f"invalid parameter `neighbors`: {knn!r} is not one of {', '.join(_NEIGHBOR_METHODS)}"
            )
        metric = self.metric.replace("_", "-") if isinstance(self.metric, str) else self.metric
        return {
            "dims": int(self.n_components),
            "perplexity": perplexity,
            "early_exaggeration": self.early_exaggeration,
            "learning_rate": learning_rate,
            "iters": None if auto_iters else int(self.max_iter),
            "auto_iters_cap": int(self.iters_cap) if auto_iters else None,
            "metric": None if metric == "precomputed" else metric,
            "init": self.init if isinstance(self.init, str) else None,
            "seed": _common.seed(self.random_state),
            "backend": self.backend,
            "gpus": self.n_gpus,
            "dof": self.dof,
            "exaggeration": self.exaggeration,
            "early_exaggeration_iters": self.early_exaggeration_iter,
            "early_momentum": self.early_momentum,
            "momentum": self.momentum,
            "coarse_boost": self.coarse_boost,
            "coarse_cell": self.coarse_cell,
            "coarse_delay": self.coarse_delay,
            "knn": knn,
            "max_neighbors": self.max_neighbors,
            "pca": self.pca,
            "order": self.order,
            "grid": self.grid,
            "grid_spacing": self.grid_spacing,
            "grid_error": self.grid_error,
            "grid_max_nodes": self.grid_max_nodes,
            "repulsion": self.repulsion,
            "near_field": self.near_field,
            "precision": self.precision,
            "max_step_norm": self.max_step_norm,
            "deterministic": self.deterministic,
            "affinities": self.affinities,
            "init_rescale": self.init_rescale,
            "keep_reference": bool(self.keep_map) and self.metric != "precomputed",
        }

    def _callbacks(self) -> list:
        cbs = self.callbacks
        if cbs is None:
            return []
        if callable(cbs):
            return [cbs]
        cbs = list(cbs)
        if not all(callable(c) for c in cbs):
            raise ValueError("invalid parameter `callbacks`: a callable or a list of callables")
        return cbs

    # -- fitting --------------------------------------------------------------------------

    def fit(self, X, y=None):
        """Embeds ``X``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            The points: any float or integer dtype (float32 C-contiguous arrays are read
            in place, others converted once), a scipy sparse matrix (reduced by randomised
            PCA, never densified), a pandas DataFrame; with ``metric="precomputed"`` a
            distance graph or matrix (see ``metric``).
        y : array-like of shape (n_samples,), default=None
            Labels, if any: they do not change the embedding, and the report measures the
            embedding's 10-NN accuracy against them.

        Returns
        -------
        self : TSNE
        """
        self._fit(X, y)
        return self

    def fit_transform(self, X, y=None):
        """Embeds ``X`` and returns the embedding (``embedding_``); see :meth:`fit`."""
        self._fit(X, y)
        return self.embedding_

    def _fit(self, X, y):
        params = self._engine_params()
        precomputed = self.metric == "precomputed"
        if precomputed and isinstance(self.init, str) and self.init == "pca":
            raise ValueError('The parameter init="pca" cannot be used with metric="precomputed".')
        X = validate_data(
            self,
            X,
            accept_sparse=["csr", "csc", "coo"],
            dtype=np.float32,
            order="C",
            ensure_all_finite=False,
            ensure_min_samples=2,
        )
        n = X.shape[0]
        call = {"params": params, "name": "X", "threads": _common.threads(self.n_jobs)}
        if precomputed:
            k = int(np.ceil(3 * max(params["perplexity"])))
            lists = (
                _input.neighbor_lists(X, n)
                if sp.issparse(X)
                else _input.distance_matrix_lists(X, min(k, params["max_neighbors"]))
            )
            call["neighbors"] = lists
        elif sp.issparse(X):
            # A map over sparse rows keeps no reference points: transform needs dense ones.
            params["keep_reference"] = False
            call["sparse"] = _input.sparse_rows(X)
        else:
            call["x"] = X
        if not precomputed and not isinstance(self.neighbors, str):
            call["neighbors"] = _input.neighbor_lists(self.neighbors, n)
        if not isinstance(self.init, str):
            init = np.ascontiguousarray(self.init, dtype=np.float32)
            if init.shape != (n, params["dims"]):
                raise ValueError(
                    f"invalid parameter `init`: an array of shape {init.shape}; "
                    f"({n}, {params['dims']}) expected"
                )
            call["init"] = init
        if y is not None:
            call["labels"] = _input.label_codes(y, n)
        call["callbacks"] = self._callbacks()
        call["callbacks_every"] = int(self.callbacks_every_iters)
        if self.verbose:
            call["say"] = _common.say
        call["warn"] = _common.warn
        _common.ready_for(params["backend"])
        fitted = _ext.embed_points(**call)
        report = json.loads(fitted.report)
        self.embedding_ = fitted.y
        self.report_ = report
        self.kl_divergence_ = float(report["optimise"]["final_kl"])
        self.n_iter_ = int(report["optimise"]["iterations"])
        self.learning_rate_ = float(report["params"]["learning_rate"])
        self.map_ = fitted.map
        self._n_features_out = self.embedding_.shape[1]
        return self

    # -- new points -------------------------------------------------------------------------

    def transform(self, X, *, perplexity=5.0, max_iter=250, learning_rate=0.1, exaggeration=1.5,
                  init_neighbors=25):
        """Places new points into the fitted map, which stays as it is (openTSNE's
        ``transform``): each new point starts at the median of its nearest reference points
        and is optimised against the fixed reference.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)
            New points with the features ``fit`` saw.
        perplexity : float, default=5.0
            Perplexity of each new point's affinities to its nearest reference points.
        max_iter : int, default=250
            Gradient steps (0 keeps the median start).
        learning_rate : float, default=0.1
            Step size.
        exaggeration : float, default=1.5
            Factor on the attraction.
        init_neighbors : int, default=25
            Reference neighbours whose median starts each new point.

        Returns
        -------
        Y_new : ndarray of shape (n_new, n_components), float32
        """
        check_is_fitted(self, "embedding_")
        if self.map_ is None:
            raise ValueError(
                "this TSNE kept no map to place new points into: fit dense points with "
                "keep_map=True (and a metric other than 'precomputed') to use transform"
            )
        X = validate_data(self, X, reset=False, dtype=np.float32, order="C", ensure_all_finite=False)
        params = {
            "perplexity": perplexity,
            "iters": max_iter,
            "learning_rate": learning_rate,
            "exaggeration": exaggeration,
            "init_neighbors": init_neighbors,
            "backend": self.backend,
        }
        _common.ready_for(self.backend)
        y, _ = self.map_.transform(X, params, _common.threads(self.n_jobs))
        return y

    # -- pickling ------------------------------------------------------------------------

    def __getstate__(self):
        state = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__.copy()
        state = dict(state)
        if state.get("map_") is not None:
            state["map_"] = bytes(state["map_"].to_bytes())
        return state

    def __setstate__(self, state):
        state = dict(state)
        if isinstance(state.get("map_"), bytes):
            state["map_"] = _ext.Map.from_bytes(state["map_"])
        if hasattr(super(), "__setstate__"):
            super().__setstate__(state)
        else:
            self.__dict__.update(state)
