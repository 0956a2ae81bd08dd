"""New points into a fitted map in Python: ``TSNE.fit`` on a reference, ``TSNE.transform`` of
held-out points (the map stays as it is), and the fitted estimator pickled and used again.

    python examples/new_points.py [OUT_DIR]
"""

import pickle
import sys
import tempfile
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier

import sgtsne

out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
out.mkdir(parents=True, exist_ok=True)

X, y = load_digits(return_X_y=True)
X_ref, X_new, y_ref, y_new = train_test_split(X, y, test_size=0.2, random_state=0)

# keep_map=True keeps what transform needs (off by default: it holds a copy of the points).
tsne = sgtsne.TSNE(random_state=0, backend="cpu", n_jobs=2, keep_map=True)
Y_ref = tsne.fit_transform(X_ref)
Y_new = tsne.transform(X_new)  # perplexity 5, 250 steps against the fixed reference

# How often a new point lands among reference points of its own digit.
knn = KNeighborsClassifier(10).fit(Y_ref, y_ref)
print(f"{len(X_new)} new points; 10-NN accuracy against the map {knn.score(Y_new, y_new):.3f}")

# The fitted map pickles with what transform needs; the copy places points alike.
with open(out / "tsne.pkl", "wb") as f:
    pickle.dump(tsne, f)
with open(out / "tsne.pkl", "rb") as f:
    again = pickle.load(f)
assert np.allclose(again.transform(X_new[:50]), Y_new[:50], atol=1e-4)
print(f"new_points: wrote {out / 'tsne.pkl'}")
