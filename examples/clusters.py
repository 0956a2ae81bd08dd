"""Clusters in Python: ``sgtsne.GaussianMixture`` (scikit-learn's interface) on the points and
on their t-SNE embedding, K chosen by BIC.

    python examples/clusters.py
"""

import numpy as np
from sklearn.datasets import load_digits
from sklearn.metrics import adjusted_rand_score

import sgtsne

X, y = load_digits(return_X_y=True)

# K chosen by the lowest BIC, as scikit-learn's GaussianMixture.bic scores it.
Y = sgtsne.TSNE(random_state=0, backend="cpu", n_jobs=2).fit_transform(X)
bic = {}
for k in range(6, 15):
    gm = sgtsne.GaussianMixture(k, n_init=3, random_state=0, backend="cpu", n_jobs=2).fit(Y)
    bic[k] = gm.bic(Y)
best = min(bic, key=bic.get)
print("BIC on the embedding:", {k: round(v) for k, v in bic.items()}, "-> K =", best)

# Ten components on the embedding and on the 64 pixel features, against the true digits.
on_map = sgtsne.GaussianMixture(10, n_init=3, random_state=0, backend="cpu", n_jobs=2)
labels_map = on_map.fit_predict(Y)
on_data = sgtsne.GaussianMixture(10, covariance_type="diag", random_state=0, backend="cpu",
                                 n_jobs=2)
labels_data = on_data.fit_predict(X)
print(f"adjusted Rand index: embedding {adjusted_rand_score(y, labels_map):.3f}, "
      f"pixels (diagonal covariances) {adjusted_rand_score(y, labels_data):.3f}")
proba = on_map.predict_proba(Y)
assert proba.shape == (len(X), 10) and np.allclose(proba.sum(1), 1)
print("clusters: done")
