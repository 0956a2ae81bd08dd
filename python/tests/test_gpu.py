"""On a GPU (skipped without one; `SGTSNE_REQUIRE_GPU=1` fails instead): the gpu backend,
deterministic runs equal to the CLI's, and a second fit in the process without start-up."""

import subprocess
import time

import numpy as np

import sgtsne


def test_gpu_embeds_and_transforms(gpu, digits):
    x, labels = digits
    model = sgtsne.TSNE(backend="gpu", keep_map=True)
    y = model.fit_transform(x, labels)
    assert model.report_["backend"]["kind"] == "gpu"
    assert model.report_["quality"]["knn_accuracy_10"] > 0.95
    assert model.transform(x[:50]).shape == (50, 2)


def test_deterministic_gpu_equals_the_cli(gpu, digits, cli, tmp_path):
    x, _ = digits
    np.save(tmp_path / "x.npy", x)
    # keep_map=True is --save-model (whose PCA basis is fitted on the host): both pairs.
    for keep_map, flags in [(False, []), (True, ["--save-model", str(tmp_path / "m.sgtsne")])]:
        subprocess.run([cli, "embed", str(tmp_path / "x.npy"), "-o", str(tmp_path / "y.npy"),
                        "--backend", "gpu", "--deterministic", "--seed", "3", "--quiet", *flags],
                       check=True)
        got = sgtsne.TSNE(backend="gpu", deterministic=True, random_state=3,
                          keep_map=keep_map).fit_transform(x)
        np.testing.assert_array_equal(got, np.load(tmp_path / "y.npy"))


def test_a_second_fit_pays_no_start_up(gpu, digits):
    x, _ = digits
    times = []
    for _ in range(3):
        t = time.perf_counter()
        sgtsne.TSNE(backend="gpu").fit(x)
        times.append(time.perf_counter() - t)
    # The first fit starts the GPU and compiles (or reads) the kernels; the later ones reuse
    # them: their set-up stage is a small part of the first's.
    assert min(times[1:]) < times[0]
