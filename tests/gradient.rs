use rand::{rngs::StdRng, Rng, SeedableRng};
use sgtsne::affinity::{exact_affinities, symmetrize, Affinities};
use sgtsne::backend::cpu::CpuGradient;
use sgtsne::kernel::Kernel;
use sgtsne::optim::Gradient;
use sgtsne::repulse::ExactRepulsion;
use sgtsne::sparse::P;
use sgtsne::Points;

/// A random symmetric P summing to 1 over n points, dense-ish.
fn random_p(n: usize, seed: u64) -> Affinities {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut indices = Vec::new();
    let mut values = Vec::new();
    let mut indptr = vec![0];
    for i in 0..n {
        for j in 0..n {
            if j != i && rng.random::<f32>() < 0.5 {
                indices.push(j as u32);
                values.push(rng.random::<f64>() + 0.1);
            }
        }
        indptr.push(indices.len());
    }
    symmetrize(n, &indptr, &indices, &values).unwrap()
}

/// KL(P‖Q) in f64 straight from the definition, Q_ij = w_ij / Σ_{k≠l} w_kl, with the
/// Student-t kernel of `dof` degrees of freedom, w = (1 + d²/α)^(−α).
fn kl(p: &Affinities, y: &[f64], dims: usize, dof: f64) -> f64 {
    let n = p.rows();
    let w = |i: usize, j: usize| {
        let d2: f64 = (0..dims)
            .map(|k| (y[i * dims + k] - y[j * dims + k]).powi(2))
            .sum();
        (1.0 + d2 / dof).powf(-dof)
    };
    let mut z = 0.0;
    for i in 0..n {
        for j in 0..n {
            if i != j {
                z += w(i, j);
            }
        }
    }
    let mut c = 0.0;
    for (i, row) in p.outer_iterator().enumerate() {
        for (j, &pij) in row.iter() {
            let pij = pij as f64;
            c += pij * (pij / (w(i, j) / z)).ln();
        }
    }
    c
}

/// For t-SNE's kernel and heavy-tailed ones (α = 0.5, 2), in 1-D to 3-D.
#[test]
fn analytic_gradient_matches_finite_differences() {
    for (dims, dof) in (1..=3).flat_map(|d| [(d, 1.0), (d, 0.5), (d, 2.0)]) {
        check_gradient(&random_p(24, dims as u64), dims, dof, 40 + dims as u64);
    }
}

/// With exact affinities: P over every pair, as `--affinities exact` builds it.
#[test]
fn analytic_gradient_matches_finite_differences_with_dense_p() {
    let (n, d) = (30, 5);
    let mut rng = StdRng::seed_from_u64(3);
    let x = Points::new(n, d, (0..n * d).map(|_| rng.random::<f32>()).collect());
    let p = exact_affinities(&x, 8.0).unwrap();
    assert_eq!(p.nnz(), n * (n - 1));
    for dims in 1..=3 {
        check_gradient(&p, dims, 1.0, 60 + dims as u64);
    }
}

/// The CPU gradient of KL(P‖Q) (exact repulsion, `dof` degrees of freedom) at a random Y
/// against central finite differences of [`kl`], and its KL against the definition.
fn check_gradient(p: &Affinities, dims: usize, dof: f64, seed: u64) {
    let n = p.rows();
    let mut rng = StdRng::seed_from_u64(seed);
    let y: Vec<f32> = (0..n * dims).map(|_| rng.random_range(-3.0..3.0)).collect();
    let blocks = P::from_csr(p.clone()).into_csb(8).unwrap();
    let kernel = Kernel::new(dof).unwrap();
    let repulse = Box::new(ExactRepulsion::with_kernel(kernel));
    let mut g = CpuGradient::with_kernel(&blocks, repulse, kernel).unwrap();
    let mut grad = vec![0f32; n * dims];
    let info = g.gradient(&y, dims, 1.0, &mut grad, true).unwrap();

    let y64: Vec<f64> = y.iter().map(|&v| v as f64).collect();
    let kl_ref = kl(p, &y64, dims, dof);
    let kl_got = info.kl.unwrap();
    assert!(
        (kl_got - kl_ref).abs() < 1e-4 * kl_ref.abs().max(1.0),
        "dof {dof}: KL {kl_got} vs {kl_ref}"
    );

    let eps = 1e-5;
    let mut err2 = 0.0;
    let mut norm2 = 0.0;
    for t in 0..n * dims {
        let mut plus = y64.clone();
        let mut minus = y64.clone();
        plus[t] += eps;
        minus[t] -= eps;
        let numeric = (kl(p, &plus, dims, dof) - kl(p, &minus, dims, dof)) / (2.0 * eps);
        // The optimiser's gradient is ∂C/∂y / 4 (the 4 lives in the learning rate).
        let analytic = 4.0 * grad[t] as f64;
        err2 += (numeric - analytic).powi(2);
        norm2 += numeric.powi(2);
    }
    let rel = (err2 / norm2).sqrt();
    assert!(
        rel < 1e-4,
        "dims {dims}, dof {dof}: relative gradient error {rel}"
    );
}
