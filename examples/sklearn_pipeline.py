"""scikit-learn: a Pipeline of StandardScaler and sgtsne.TSNE on the 8×8 digits.

    python examples/sklearn_pipeline.py [OUT_DIR]

Writes the embedding (``digits_tsne.npy``) and, with matplotlib installed, a plot
(``digits_tsne.png``).
"""

import sys
import tempfile
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sgtsne

out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
out.mkdir(parents=True, exist_ok=True)

X, y = load_digits(return_X_y=True)  # 1,797 × 64

pipe = make_pipeline(
    StandardScaler(),
    # backend="cpu" and n_jobs=2 keep the example small; leave them out to use a GPU and
    # every core when there are.
    sgtsne.TSNE(perplexity=30, random_state=0, backend="cpu", n_jobs=2),
)
Y = pipe.fit_transform(X, y)  # y does not change the map; the report scores it against y

tsne = pipe[-1]
print(f"embedding {Y.shape}, KL {tsne.kl_divergence_:.3f} after {tsne.n_iter_} iterations")
print(f"10-NN label accuracy: {tsne.report_['quality']['knn_accuracy_10']:.3f}")
np.save(out / "digits_tsne.npy", Y)

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5))
    ax.scatter(Y[:, 0], Y[:, 1], c=y, cmap="tab10", s=3)
    ax.set_axis_off()
    fig.savefig(out / "digits_tsne.png", dpi=100)
except ImportError:
    pass
print(f"sklearn_pipeline: wrote {out}")
