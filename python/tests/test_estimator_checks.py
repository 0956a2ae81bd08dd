"""scikit-learn's own estimator checks on TSNE and GaussianMixture.

TSNE runs with scikit-learn's own test parameters for its TSNE (perplexity 2), few
iterations (the checks fit dozens of times) and its map kept, so that transform is checked. The checks that cannot apply are declared
below, each with its reason.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sgtsne import TSNE, GaussianMixture

#: Checks that cannot apply to t-SNE's transform, which places *new* points into a fitted
#: map (openTSNE's transform): the training points placed as new points are not the
#: embedding itself, and fit_transform gives the embedding.
TSNE_EXPECTED_FAILURES = {
    "check_transformer_general": (
        "transform places new points into the fitted map; applied to the training points "
        "it does not give back fit_transform's embedding, by design (openTSNE's transform)"
    ),
    "check_transformer_data_not_an_array": (
        "the same comparison as check_transformer_general, on a list-like input"
    ),
    "check_transformer_preserve_dtypes": (
        "the embedding is float32 whatever the input dtype: the engine computes in float32"
    ),
}

GMM_EXPECTED_FAILURES = {}


def expected_failures(estimator):
    if isinstance(estimator, TSNE):
        return TSNE_EXPECTED_FAILURES
    return GMM_EXPECTED_FAILURES


@parametrize_with_checks(
    [
        TSNE(perplexity=2, max_iter=60, early_exaggeration_iter=20, backend="cpu", n_jobs=1,
             keep_map=True),
        GaussianMixture(n_components=2, backend="cpu", n_jobs=1),
    ],
    expected_failed_checks=expected_failures,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
