"""How well an embedding keeps the classes' global arrangement: Spearman's rank correlation
between the distances of the class centroids in the data and in the embedding (45 pairs
for 10 classes); 1 is the same order of distances.

    python3 scripts/bench/global_structure.py POINTS.npy LABELS.npy EMBEDDING.npy
"""
import sys

import numpy as np


def centroid_distances(x, labels):
    classes = np.unique(labels)
    c = np.stack([x[labels == k].mean(axis=0) for k in classes])
    i, j = np.triu_indices(len(classes), 1)
    return np.linalg.norm(c[i] - c[j], axis=1)


def ranks(v):
    r = np.empty(len(v))
    r[np.argsort(v, kind="stable")] = np.arange(len(v))
    return r


def main():
    x = np.load(sys.argv[1]).astype(np.float64)
    labels = np.load(sys.argv[2])
    y = np.load(sys.argv[3]).astype(np.float64)
    a = ranks(centroid_distances(x, labels))
    b = ranks(centroid_distances(y, labels))
    print(f"{np.corrcoef(a, b)[0, 1]:.4f}")


if __name__ == "__main__":
    main()
