"""GaussianMixture against scikit-learn's on the same data, from the same start."""

import numpy as np
import pytest
from sklearn.mixture import GaussianMixture as SkGaussianMixture

import sgtsne


@pytest.mark.parametrize("covariance_type", ["full", "diag", "spherical"])
def test_same_labels_and_log_likelihood_as_scikit_learn(blobs, covariance_type):
    x = blobs[0].astype(np.float64)
    ours = sgtsne.GaussianMixture(3, covariance_type=covariance_type, max_iter=50, tol=1e-8,
                                  backend="cpu", random_state=0).fit(x)
    init = ours.initial_
    cov = init["covariances"]
    precisions = {"full": lambda c: np.linalg.inv(c), "diag": lambda c: 1 / c,
                  "spherical": lambda c: 1 / c}[covariance_type](cov)
    theirs = SkGaussianMixture(3, covariance_type=covariance_type, max_iter=50, tol=1e-8,
                               weights_init=init["weights"], means_init=init["means"],
                               precisions_init=precisions).fit(x)
    np.testing.assert_array_equal(ours.predict(x), theirs.predict(x))
    assert abs(ours.score(x) - theirs.score(x)) < 1e-6
    np.testing.assert_allclose(ours.means_, theirs.means_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ours.covariances_, theirs.covariances_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ours.precisions_cholesky_, theirs.precisions_cholesky_, rtol=1e-5)
    np.testing.assert_allclose(ours.predict_proba(x), theirs.predict_proba(x), atol=1e-8)
    np.testing.assert_allclose(ours.score_samples(x), theirs.score_samples(x), rtol=1e-9)
    assert ours.bic(x) == pytest.approx(theirs.bic(x), rel=1e-9)
    assert ours.aic(x) == pytest.approx(theirs.aic(x), rel=1e-9)


def test_bad_input_is_a_value_error(blobs):
    gm = sgtsne.GaussianMixture(3, backend="cpu").fit(blobs[0])
    with pytest.raises(ValueError, match="features"):
        gm.predict(blobs[0][:, :4])
    with pytest.raises(ValueError, match="components"):
        sgtsne.GaussianMixture(500, backend="cpu").fit(blobs[0])
    with pytest.raises(ValueError, match="covariance_type"):
        sgtsne.GaussianMixture(2, covariance_type="tied", backend="cpu").fit(blobs[0])
    x, _ = gm.sample(20)
    assert x.shape == (20, 10)
