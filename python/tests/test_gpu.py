"""On a GPU (skipped without one; `SGTSNE_REQUIRE_GPU=1` fails instead): the gpu backend,
deterministic runs equal to the CLI's, and a second fit on what the process kept."""

import subprocess

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


def test_a_second_fit_on_what_the_process_kept(gpu, digits):
    # The process keeps its GPU, kernels, FFT plans, staging buffer and cuBLAS between fits
    # (their time is a benchmark's: scripts/bench/python_gpu.py); a later fit on them gives
    # the first one's embedding bit for bit.
    x, _ = digits
    fits = [sgtsne.TSNE(backend="gpu", deterministic=True, random_state=5).fit_transform(x)
            for _ in range(2)]
    np.testing.assert_array_equal(fits[0], fits[1])
