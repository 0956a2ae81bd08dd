"""``sgtsne.GaussianMixture``: scikit-learn's ``GaussianMixture`` interface over the engine's
EM (``sgtsne gmm``), on the CPU or a GPU."""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _common
from . import _sgtsne as _ext


class GaussianMixture(DensityMixin, BaseEstimator):
    """A Gaussian mixture fitted by EM, as scikit-learn's
    :class:`sklearn.mixture.GaussianMixture` fits it (the same E- and M-steps, in f64), on
    all cores or a GPU.

    Parameters
    ----------
    n_components : int, default=1
        Components (K).
    covariance_type : {"full", "diag", "spherical"}, default="full"
        Each component's covariance: a full matrix, a diagonal, or one variance.
    tol : float, default=1e-3
        EM stops when the mean log-likelihood per sample changes by less.
    reg_covar : float, default=1e-6
        Added to every covariance's diagonal.
    max_iter : int, default=100
        EM iterations at most.
    n_init : int, default=1
        Fits from different seeds; the best is kept.
    init_params : {"kmeans", "random"}, default="kmeans"
        The first responsibilities: k-means seeded by k-means++, or random.
    random_state : int or None, default=None
        Seed (``None`` is 0, as the CLI).
    backend : {"auto", "cpu", "gpu"}, default="auto"
        Where EM runs; ``"auto"`` takes the GPU for large inputs (n · d ≥ 2^20) when usable.
    n_jobs : int or None, default=None
        CPU threads (``None``: every core).

    Attributes
    ----------
    weights_, means_, covariances_, precisions_, precisions_cholesky_
        The fitted model, shaped as scikit-learn's.
    converged_ : bool
    n_iter_ : int
    lower_bound_ : float
        The mean log-likelihood per sample at the last iteration.
    initial_ : dict
        The model EM started from (``weights``, ``means``, ``covariances``).
    notes_ : list of str
        What the fit did to keep going (re-seeded components, raised floors).
    n_features_in_ : int
    """

    def __init__(self, n_components=1, *, covariance_type="full", tol=1e-3, reg_covar=1e-6,
                 max_iter=100, n_init=1, init_params="kmeans", random_state=None,
                 backend="auto", n_jobs=None):
        self.n_components = n_components
        self.covariance_type = covariance_type
        self.tol = tol
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.n_init = n_init
        self.init_params = init_params
        self.random_state = random_state
        self.backend = backend
        self.n_jobs = n_jobs

    def fit(self, X, y=None):
        """Fits the mixture to ``X`` (n_samples, n_features); returns ``self``."""
        self._fit(X)
        return self

    def fit_predict(self, X, y=None):
        """Fits the mixture and returns each sample's component."""
        return self._fit(X)

    def _fit(self, X):
        X = validate_data(self, X, dtype=np.float64, order="C", ensure_min_samples=2)
        _common.ready_for(self.backend)
        fit = _ext.gmm_fit(
            X, int(self.n_components), self.covariance_type, self.init_params,
            int(self.max_iter), float(self.tol), int(self.n_init), float(self.reg_covar),
            _common.seed(self.random_state), self.backend, _common.threads(self.n_jobs),
        )
        d = X.shape[1]
        self.weights_, self.means_, self.covariances_ = self._shaped(fit["model"], d)
        w0, m0, c0 = self._shaped(fit["initial"], d)
        self.initial_ = {"weights": w0, "means": m0, "covariances": c0}
        self.precisions_cholesky_ = _precisions_cholesky(self.covariances_, self.covariance_type)
        self.precisions_ = _precisions(self.precisions_cholesky_, self.covariance_type)
        self.converged_ = bool(fit["converged"])
        self.n_iter_ = len(fit["history"])
        self.lower_bound_ = float(fit["history"][-1]) if fit["history"] else float(fit["score"])
        self.notes_ = list(fit["notes"])
        return np.asarray(fit["labels"], dtype=np.int64)

    def _shaped(self, arrays, d):
        weights, means, covariances = arrays
        k = weights.shape[0]
        if self.covariance_type == "full":
            covariances = covariances.reshape(k, d, d)
        elif self.covariance_type == "spherical":
            covariances = covariances.reshape(k)
        return weights, means, covariances

    def _score(self, X):
        check_is_fitted(self, "means_")
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
        k = self.weights_.shape[0]
        covariances = np.ascontiguousarray(self.covariances_, dtype=np.float64).reshape(k, -1)
        return _ext.gmm_score(self.covariance_type, self.weights_, self.means_, covariances, X,
                              _common.threads(self.n_jobs))

    def predict(self, X):
        """Each sample's most responsible component."""
        return self._score(X)[0].argmax(axis=1)

    def predict_proba(self, X):
        """p(component | sample), n_samples × n_components."""
        return self._score(X)[0]

    def score_samples(self, X):
        """log p(x) of each sample."""
        return self._score(X)[1]

    def score(self, X, y=None):
        """The mean log-likelihood per sample."""
        return float(self._score(X)[2])

    def bic(self, X):
        """Bayesian information criterion on ``X`` (lower is better)."""
        _, ll, mean, n_parameters = self._score(X)
        return -2 * mean * ll.shape[0] + n_parameters * np.log(ll.shape[0])

    def aic(self, X):
        """Akaike information criterion on ``X`` (lower is better)."""
        _, ll, mean, n_parameters = self._score(X)
        return -2 * mean * ll.shape[0] + 2 * n_parameters

    def sample(self, n_samples=1):
        """Draws ``n_samples`` from the fitted mixture: (X, component labels)."""
        check_is_fitted(self, "means_")
        rng = np.random.default_rng(_common.seed(self.random_state))
        counts = rng.multinomial(n_samples, self.weights_)
        d = self.means_.shape[1]
        parts, labels = [], []
        for c, m in enumerate(counts):
            cov = self.covariances_[c]
            if self.covariance_type == "diag":
                cov = np.diag(cov)
            elif self.covariance_type == "spherical":
                cov = np.eye(d) * cov
            parts.append(rng.multivariate_normal(self.means_[c], cov, int(m)))
            labels.append(np.full(m, c, dtype=np.int64))
        return np.vstack(parts), np.concatenate(labels)


def _precisions_cholesky(covariances, kind):
    """The Cholesky factors of the precision matrices, as scikit-learn stores them."""
    if kind == "full":
        out = np.empty_like(covariances)
        for c, cov in enumerate(covariances):
            lower = np.linalg.cholesky(cov)
            out[c] = solve_triangular(lower, np.eye(cov.shape[0]), lower=True).T
        return out
    return 1.0 / np.sqrt(covariances)


def _precisions(chol, kind):
    if kind == "full":
        return np.einsum("kij,klj->kil", chol, chol)
    return chol**2
