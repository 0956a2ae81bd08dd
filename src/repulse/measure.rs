//! Measurements (not assertions): run with
//! `cargo test --release --lib repulse::measure -- --ignored --nocapture`.

use super::fft::tests::clusters;
use super::*;

fn force_err(spec: GridSpec, y: &[f32], dims: usize) -> (f64, f64, usize) {
    let mut exact = vec![0.0f32; y.len()];
    let re = ExactRepulsion::new().repulse(y, dims, &mut exact).unwrap();
    let mut approx = vec![0.0f32; y.len()];
    let ra = FftRepulsion::new(spec)
        .repulse(y, dims, &mut approx)
        .unwrap();
    let e: Vec<f64> = exact.iter().map(|&v| v as f64).collect();
    let a: Vec<f64> = approx.iter().map(|&v| v as f64).collect();
    (
        relative_error(&e, &a),
        (ra.z - re.z).abs() / re.z,
        ra.grid.unwrap(),
    )
}

#[test]
#[ignore]
fn error_vs_extent() {
    for dims in [1, 2, 3] {
        for spread in [1e-3f32, 0.3, 1.0, 3.0, 10.0] {
            let y: Vec<f32> = clusters(2000, dims, 10, 1.0, 1)
                .iter()
                .map(|v| v * spread)
                .collect();
            for h in [0.5, 0.35, 0.25] {
                let (ef, ez, p) = force_err(GridSpec::Auto { h }, &y, dims);
                println!("{dims}-D scale {spread:>6} h {h:.2} p {p:>4}: F {ef:.2e} Z {ez:.2e}");
            }
        }
    }
}
