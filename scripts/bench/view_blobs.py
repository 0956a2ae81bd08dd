"""A test embedding for the viewer's benchmarks: N points in ten 2-D Gaussian blobs of
uneven size, and each point's blob (0–9) as labels.

    python view_blobs.py N OUT.npy LABELS.npy
"""

import sys

import numpy as np

n, out, labels_out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
rng = np.random.default_rng(0)
weights = np.linspace(1, 3, 10)
labels = rng.choice(10, size=n, p=weights / weights.sum()).astype(np.uint8)
centres = rng.uniform(-60, 60, size=(10, 2))
y = (centres[labels] + rng.standard_normal((n, 2)) * rng.uniform(2, 8, size=10)[labels, None]).astype(np.float32)
np.save(out, y)
np.save(labels_out, labels)
