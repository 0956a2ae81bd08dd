"""sgtsne.TSNE beyond scikit-learn's checks: inputs of every kind, given neighbours,
transform, callbacks, errors, pickling, the GIL, and equality with the CLI."""

import pickle
import subprocess
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

import sgtsne

FAST = dict(backend="cpu", n_jobs=2, max_iter=300)


def knn_accuracy(y, labels, k=10):
    from sklearn.neighbors import KNeighborsClassifier

    return KNeighborsClassifier(k).fit(y, labels).score(y, labels)


def test_digits_embed_well_and_report(digits):
    x, labels = digits
    model = sgtsne.TSNE(backend="cpu", n_jobs=2)
    y = model.fit_transform(x, labels)
    assert y.shape == (x.shape[0], 2) and y.dtype == np.float32
    assert model.embedding_ is y
    assert model.n_iter_ == 1000 and model.n_features_in_ == 64
    assert model.learning_rate_ == pytest.approx(max(x.shape[0] / 12, 50))
    assert 0 < model.kl_divergence_ < 1.2
    assert model.report_["quality"]["knn_accuracy_10"] > 0.95
    assert knn_accuracy(y, labels) > 0.95


def test_every_dtype_and_layout_gives_the_same_embedding(blobs):
    x, _ = blobs
    want = sgtsne.TSNE(**FAST).fit_transform(x)
    for other in [x.astype(np.float64), np.asfortranarray(x), x.tolist()]:
        np.testing.assert_array_equal(sgtsne.TSNE(**FAST).fit_transform(other), want)
    ints = np.round(x * 10).astype(np.int32)
    assert sgtsne.TSNE(**FAST).fit_transform(ints).shape == (300, 2)


def test_dataframe_input_keeps_feature_names(blobs):
    pd = pytest.importorskip("pandas")
    x, _ = blobs
    df = pd.DataFrame(x, columns=[f"g{i}" for i in range(x.shape[1])])
    model = sgtsne.TSNE(**FAST).fit(df)
    assert list(model.feature_names_in_) == list(df.columns)
    np.testing.assert_array_equal(model.embedding_, sgtsne.TSNE(**FAST).fit_transform(x))
    assert list(model.get_feature_names_out()) == ["tsne0", "tsne1"]


def test_sparse_input_is_embedded_without_densifying(digits):
    x, labels = digits
    for matrix in (sp.csr_matrix(x), sp.csc_matrix(x)):
        y = sgtsne.TSNE(pca=20, **FAST).fit_transform(matrix)
        assert y.shape == (x.shape[0], 2)
        assert knn_accuracy(y, labels) > 0.9


def test_given_neighbors_equal_a_search(blobs):
    from sklearn.neighbors import NearestNeighbors

    x, _ = blobs
    searched = sgtsne.TSNE(perplexity=10, neighbors="exact", **FAST).fit_transform(x)
    idx, dist = sgtsne.knn(x, 30, method="exact", backend="cpu")
    given = sgtsne.TSNE(perplexity=10, neighbors=(idx, dist), **FAST).fit_transform(x)
    np.testing.assert_allclose(given, searched, atol=1e-4)
    # scikit-learn's neighbours, its graph, and metric="precomputed" all embed.
    nn = NearestNeighbors(n_neighbors=30).fit(x)
    d, i = nn.kneighbors(x)
    assert sgtsne.TSNE(perplexity=10, neighbors=(i, d), **FAST).fit_transform(x).shape == (300, 2)
    graph = nn.kneighbors_graph(mode="distance")
    y = sgtsne.TSNE(perplexity=10, metric="precomputed", init="random", **FAST).fit_transform(graph)
    assert knn_accuracy(y, blobs[1]) > 0.95
    from sklearn.metrics import pairwise_distances

    full = pairwise_distances(x)
    y = sgtsne.TSNE(perplexity=10, metric="precomputed", init="random", **FAST).fit_transform(full)
    assert knn_accuracy(y, blobs[1]) > 0.95


def test_transform_places_new_points_near_their_cluster(blobs):
    x, labels = blobs
    train = np.arange(300) % 5 != 0
    model = sgtsne.TSNE(keep_map=True, **FAST).fit(x[train])
    placed = model.transform(x[~train])
    assert placed.shape == (60, 2)
    from sklearn.neighbors import KNeighborsClassifier

    clf = KNeighborsClassifier(5).fit(model.embedding_, labels[train])
    assert clf.score(placed, labels[~train]) > 0.95
    with pytest.raises(ValueError, match="features"):
        model.transform(x[:5, :4])
    with pytest.raises(ValueError, match="keep_map=True"):
        sgtsne.TSNE(**FAST).fit(x).transform(x[:5])


def test_pickled_model_transforms_the_same(blobs):
    x, _ = blobs
    model = sgtsne.TSNE(keep_map=True, **FAST).fit(x[:250])
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.embedding_, model.embedding_)
    np.testing.assert_array_equal(again.transform(x[250:]), model.transform(x[250:]))


def test_callbacks_see_the_run_and_can_stop_it(blobs):
    x, _ = blobs
    seen = []

    def callback(iteration, kl, embedding):
        seen.append((iteration, kl, embedding.shape))
        return iteration >= 100

    model = sgtsne.TSNE(callbacks=callback, callbacks_every_iters=25, **FAST).fit(x)
    assert [s[0] for s in seen] == [25, 50, 75, 100]
    assert all(np.isfinite(s[1]) and s[2] == (300, 2) for s in seen)
    assert model.n_iter_ == 101
    assert model.report_["optimise"]["interrupted_at"] == 101


def test_a_callback_error_ends_the_run_and_is_raised(blobs):
    def broken(iteration, kl, embedding):
        raise RuntimeError("callback broke")

    with pytest.raises(RuntimeError, match="callback broke"):
        sgtsne.TSNE(callbacks=[broken], **FAST).fit(blobs[0])


def test_bad_inputs_raise_value_errors_with_the_engines_message(blobs):
    x, _ = blobs
    bad = x.copy()
    bad[4, 2] = np.nan
    with pytest.raises(ValueError, match=r"row 5, column 3: NaN"):
        sgtsne.TSNE(**FAST).fit(bad)
    bad[4, 2] = np.inf
    with pytest.raises(ValueError, match=r"row 5, column 3: inf"):
        sgtsne.TSNE(**FAST).fit(bad)
    with pytest.raises(ValueError, match="perplexity"):
        sgtsne.TSNE(perplexity=0.5, **FAST).fit(x)
    with pytest.raises(ValueError, match="dims"):
        sgtsne.TSNE(n_components=4, **FAST).fit(x)
    with pytest.raises(ValueError, match="backend"):
        sgtsne.TSNE(backend="tpu").fit(x)
    with pytest.raises(ValueError, match="too few|perplexity"):
        sgtsne.TSNE(**FAST).fit(x[:20])
    with pytest.raises(ValueError, match="identical"):
        sgtsne.TSNE(perplexity=2, **FAST).fit(np.ones((30, 4), np.float32))
    with pytest.raises(ValueError, match="out of range"):
        idx = np.zeros((300, 10), np.int64)
        idx[3, 2] = 300
        sgtsne.TSNE(perplexity=3, neighbors=(idx, np.ones((300, 10))), **FAST).fit(x)


def test_the_gpu_backend_without_a_gpu_is_a_runtime_error(blobs):
    if sgtsne.info()["gpu"]:
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="no usable GPU"):
        sgtsne.TSNE(backend="gpu").fit(blobs[0])


def test_the_gil_is_released_during_a_fit(digits):
    x, _ = digits
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.01)

    t = threading.Thread(target=tick)
    t.start()
    start = time.perf_counter()
    sgtsne.TSNE(backend="cpu", n_jobs=1, max_iter=400).fit(x)
    elapsed = time.perf_counter() - start
    done.set()
    t.join()
    during = [s for s in ticks if start < s < start + elapsed]
    # Another Python thread ran throughout: at least a tick every 0.1 s of the fit.
    assert len(during) >= elapsed / 0.1


def test_embedding_equals_the_clis_bit_for_bit(digits, cli, tmp_path):
    x, _ = digits
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npy"
    subprocess.run(
        [cli, "embed", str(tmp_path / "x.npy"), "-o", str(out), "--backend", "cpu",
         "--threads", "2", "--seed", "7", "--perplexity", "20", "--iters", "500", "--quiet"],
        check=True,
    )
    want = np.load(out)
    got = sgtsne.TSNE(backend="cpu", n_jobs=2, random_state=7, perplexity=20, max_iter=500).fit_transform(x)
    np.testing.assert_array_equal(got, want)


def test_verbose_prints_progress_and_the_summary(blobs, capsys):
    sgtsne.TSNE(verbose=True, **FAST).fit(blobs[0])
    err = capsys.readouterr().err
    assert "[sgtsne] optimise" in err and "KL" in err and "embedded X (300 × 10)" in err


def test_memory_that_cannot_be_had_is_a_memory_error(blobs, monkeypatch):
    # The engine plans a run's memory before the work; a cap below the plan refuses it.
    monkeypatch.setenv("SGTSNE_MAX_HOST_BYTES", "1000")
    with pytest.raises(MemoryError, match="memory"):
        sgtsne.TSNE(**FAST).fit(blobs[0])


def test_auto_iterations_stop_once_the_map_has_settled(digits):
    x, _ = digits
    model = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter="auto", iters_cap=4000).fit(x)
    optimise, optim = model.report_["optimise"], model.report_["params"]["optim"]
    assert optimise["auto_stop"] in ("converged", "flattened")
    assert 250 < model.n_iter_ < 4000 == optim["iters"]
    assert model.n_iter_ == optimise["iterations"]
    assert optim["momentum_late"] == pytest.approx(0.9)
    assert optim["coarse_boost"] == pytest.approx(3.0)
    assert optim["coarse_delay"] == 150
    last = optimise["stability_history"][-1]
    assert last == optimise["stability"]
    if optimise["auto_stop"] == "converged":
        assert last["kept"] >= 0.97 and last["kl_drop"] <= 0.015
    else:
        assert last["kept"] >= 0.85 and last["kl_drop"] <= 0.006


def test_auto_iterations_hold_the_grid_to_a_budget(digits):
    # max_iter="auto" holds the grid to 4 nodes a point on the CPU with the near field on;
    # a budget given is used as it is, and 0 is refused with the parameter named.
    x, _ = digits
    n = len(x)
    auto = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter="auto", iters_cap=600).fit(x)
    params = auto.report_["params"]
    assert params["grid_max_nodes"] == 4 * n and params["near_field"] is True
    assert auto.report_["optimise"]["final_grid"] ** 2 <= 4 * n
    given = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter=300, grid_max_nodes=3000).fit(x)
    assert given.report_["params"]["grid_max_nodes"] == 3000
    assert given.report_["optimise"]["final_grid"] ** 2 <= 3000
    with pytest.raises(ValueError, match="grid_max_nodes"):
        sgtsne.TSNE(backend="cpu", max_iter=300, grid_max_nodes=0).fit(x)


def test_the_coarse_step_can_be_given_or_refused(digits):
    x, _ = digits
    plain = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter=400, random_state=0)
    boosted = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter=400, random_state=0,
                          coarse_boost=3.0, coarse_cell=5.0)
    y_plain, y_boosted = plain.fit_transform(x), boosted.fit_transform(x)
    assert plain.report_["params"]["optim"]["coarse_boost"] == 0
    assert boosted.report_["params"]["optim"]["coarse_boost"] == pytest.approx(3.0)
    assert not np.array_equal(y_plain, y_boosted) and np.isfinite(y_boosted).all()
    off = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter="auto", coarse_boost=0).fit(x)
    assert off.report_["params"]["optim"]["coarse_boost"] == 0
    # Delayed, it runs from later on; delayed past the run's end, never: the plain run's
    # embedding.
    late = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter=400, random_state=0,
                       coarse_boost=3.0, coarse_cell=5.0, coarse_delay=50)
    y_late = late.fit_transform(x)
    assert late.report_["params"]["optim"]["coarse_delay"] == 50
    assert not np.array_equal(y_late, y_boosted) and not np.array_equal(y_late, y_plain)
    never = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter=400, random_state=0,
                        coarse_boost=3.0, coarse_delay=400)
    assert np.array_equal(never.fit_transform(x), y_plain)
    with pytest.raises(ValueError, match="coarse-boost"):
        sgtsne.TSNE(backend="cpu", max_iter=300, coarse_boost=-1).fit(x)


def test_a_run_stopped_while_its_map_moves_warns(digits):
    x, _ = digits
    with pytest.warns(UserWarning, match="the map was still changing"):
        model = sgtsne.TSNE(backend="cpu", n_jobs=2, max_iter=300).fit(x)
    assert model.report_["optimise"]["stability"]["kept"] < 0.94
    assert model.report_["params"]["optim"]["momentum_late"] == pytest.approx(0.8)


@pytest.mark.parametrize("bad", [dict(max_iter="often"), dict(max_iter="auto", iters_cap=0)])
def test_bad_iteration_counts_name_their_parameter(blobs, bad):
    with pytest.raises(ValueError, match=next(iter(bad)) if "iters_cap" not in bad else "iters_cap"):
        sgtsne.TSNE(**{**FAST, **bad}).fit(blobs[0])
