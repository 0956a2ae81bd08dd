"""sgtsne: t-SNE at the million-point scale, on the CPU or a GPU.

- :class:`TSNE` — scikit-learn's estimator (``fit``, ``fit_transform``, ``transform``);
- :func:`sgtsne.tl.tsne` — scanpy's ``tl.tsne`` on an ``AnnData``;
- :func:`knn`, :func:`kl_divergence` — the engine's neighbour search and KL score;
- :class:`GaussianMixture` — scikit-learn's ``GaussianMixture`` over the engine's EM;
- :func:`view` — an embedding as an interactive map, inline in a notebook or as a file;
- :func:`info` — which backends this process can use, and why not.

The work runs in Rust with the GIL released; Ctrl-C stops it within one iteration.
"""

from . import tl
from ._functions import info, kl_divergence, knn
from ._gmm import GaussianMixture
from ._sgtsne import __version__
from ._tsne import TSNE
from ._view import Map, view

__all__ = ["TSNE", "GaussianMixture", "Map", "info", "kl_divergence", "knn", "tl", "view",
           "__version__"]
