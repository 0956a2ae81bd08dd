"""``sgtsne.view``: an embedding as an interactive map (pan, zoom, colour by any column,
hover, lasso, legend toggles), one self-contained HTML page — shown inline in a notebook or
written to a file. The same page as ``sgtsne view`` on the command line."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from . import _sgtsne as _ext


def _column(name, values):
    """``(name, values)`` as the engine takes a column: float64 numbers, or texts whose kind
    the engine guesses as for ``sgtsne view --meta`` (whole numbers with few values and any
    text are categories)."""
    v = np.asarray(values)
    if v.ndim != 1:
        raise ValueError(f"column {name!r} has shape {v.shape}; one value per point expected")
    if v.dtype.kind == "f":
        return str(name), np.ascontiguousarray(v, dtype=np.float64)
    return str(name), [str(x) for x in v.tolist()]


class Map:
    """A map of an embedding: ``_repr_html_`` shows it in a notebook, :meth:`save` writes it."""

    def __init__(self, y, columns, title):
        self._y, self._columns, self._title = y, columns, title

    @property
    def html(self) -> str:
        """The self-contained page."""
        return _ext.view_html(self._y, self._columns, self._title)

    def save(self, path) -> Path:
        """Writes the page to ``path`` (atomically) and returns the path."""
        _ext.view_write(str(path), self._y, self._columns, self._title)
        return Path(path)

    def _repr_html_(self) -> str:
        page = html.escape(self.html, quote=True)
        return (f'<iframe srcdoc="{page}" style="width:100%;height:600px;border:0" '
                'sandbox="allow-scripts allow-downloads"></iframe>')


def view(Y, labels=None, *, meta=None, path=None, title="sgtsne"):
    """The embedding ``Y`` as an interactive map.

    Parameters
    ----------
    Y : array-like of shape (n, 1–3), or a fitted :class:`sgtsne.TSNE`
        The embedding (its ``embedding_`` for a TSNE).
    labels : array-like of shape (n,) or None, default=None
        One label per point (names or numbers): the points' colours and the legend.
    meta : dict of name → array-like, or a pandas DataFrame, default=None
        More columns to colour by and to show on hover: text and whole numbers with few
        values as categories, other numbers on a colour bar.
    path : str or Path or None, default=None
        Where to write the page; ``None`` returns the map, which a notebook shows inline.
    title : str, default="sgtsne"
        The page's title.

    Returns
    -------
    The path written, or a :class:`Map` (``.html``, ``.save(path)``, shown inline).
    """
    y = getattr(Y, "embedding_", Y)
    y = np.ascontiguousarray(y, dtype=np.float32)
    if y.ndim == 1:
        y = y.reshape(-1, 1)
    if y.ndim != 2:
        raise ValueError(f"Y must be n × 1–3 coordinates, got shape {y.shape}")
    columns = []
    if labels is not None:
        columns.append(_column("label", labels))
    if meta is not None:
        items = meta.items() if hasattr(meta, "items") else meta
        columns += [_column(name, values) for name, values in items]
    m = Map(y, columns, str(title))
    if path is None:
        return m
    return m.save(path)
