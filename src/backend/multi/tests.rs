use super::*;
use crate::backend::digits_p;
use crate::backend::gpu::optimize_device_observed;
use crate::embed::Precision;
use crate::progress::Silent;
use crate::repulse::{GridSpec, RepulsionMethod, RepulsionSpec};
use crate::sparse::{ragged_p, Hyb, HybGpu};
use rand::{rngs::StdRng, Rng, SeedableRng};

/// An exact sum's total in its units of 2⁻⁴⁰ (hi · 2³² + lo): the same for the same terms
/// however the carries between the words fell.
fn exact_total(words: &[u64]) -> i128 {
    assert_eq!(words[2], 0, "a term was not finite");
    ((words[0] as i64 as i128) << 32) + words[1] as i128
}

fn spec(deterministic: bool) -> RepulsionSpec {
    RepulsionSpec {
        method: RepulsionMethod::Fft,
        grid: GridSpec::default_for(2, true),
        precision: Precision::F32,
        kernel: Kernel::CAUCHY,
        deterministic,
        near_field: false,
        max_nodes: crate::repulse::grid::MAX_TOTAL_NODES,
    }
}

crate::gpu::gpu_test! {
    /// The attraction of each GPU's row block (its rows, every point's Y) gives exactly
    /// those rows of the whole P's attraction: bit for bit in fixed point, within float
    /// rounding otherwise (the COO part's atomics), Σ p ln w adding up to the whole's.
    fn row_blocks_attract_as_the_whole_does(gpu) {
        let seed = rand::random();
        let mut rng = StdRng::seed_from_u64(seed);
        let n = 30_011;
        let whole = Hyb::from_csr(&ragged_p(n, &mut rng), Some(4)).unwrap();
        let part = Partition::new(n, 3).unwrap();
        let s = &gpu.stream;
        for dims in [2, 3] {
            let y: Vec<f32> = (0..n * dims).map(|_| rng.random_range(-20.0..20.0)).collect();
            let y_dev = s.clone_htod(&y).unwrap();
            for deterministic in [false, true] {
                let attract = |hyb: &HybGpu| -> (Vec<f32>, Vec<u64>) {
                    let mut force = s.alloc_zeros::<f32>(hyb.n() * dims).unwrap();
                    let mut kl = s.alloc_zeros::<u64>(crate::gpu::sum::WORDS).unwrap();
                    let mut fixed = deterministic
                        .then(|| s.alloc_zeros::<i64>(hyb.n() * dims).unwrap());
                    hyb.attract_device(
                        s,
                        Kernel::CAUCHY,
                        &y_dev,
                        dims,
                        &mut force,
                        Some(&mut kl),
                        fixed.as_mut(),
                    )
                    .unwrap();
                    (s.clone_dtoh(&force).unwrap(), s.clone_dtoh(&kl).unwrap())
                };
                let (want, want_kl) = attract(&HybGpu::new(gpu, &whole).unwrap());
                let mut got = Vec::new();
                let mut total = 0i128;
                for rank in 0..3 {
                    let block = HybGpu::new(gpu, &whole.row_block(part.rows(rank))).unwrap();
                    let (f, kl) = attract(&block);
                    got.extend(f);
                    total += exact_total(&kl);
                }
                let what = format!("seed {seed}, {dims}-D, deterministic {deterministic}");
                if deterministic {
                    assert!(want == got, "{what}: the blocks' forces differ");
                } else {
                    let e = crate::repulse::relative_error(&want, &got);
                    assert!(e < 1e-6, "{what}: relative error {e}");
                }
                // Exact sums: the blocks' totals add up to the whole's.
                assert_eq!(exact_total(&want_kl), total, "{what}: Σ p ln w");
            }
        }
    }

    /// Row blocks cut on the device (GPU 0's own block, and the shapes the others receive)
    /// hold what the host's cut holds, COO slices included.
    fn device_blocks_equal_host_blocks(gpu) {
        let mut rng = StdRng::seed_from_u64(3);
        let n = 20_011;
        let host = Hyb::from_csr(&ragged_p(n, &mut rng), Some(4)).unwrap();
        let whole = HybGpu::new(gpu, &host).unwrap();
        let part = Partition::new(n, 3).unwrap();
        let rows: Vec<_> = (0..3).map(|r| part.rows(r)).collect();
        let shapes = whole.block_shapes(&rows).unwrap();
        for (r, shape) in shapes.iter().enumerate() {
            let want = host.row_block(rows[r].clone());
            assert_eq!(shape.coo, host.coo_range(rows[r].clone()));
            let got = whole.row_block(shape).unwrap().to_host().unwrap();
            assert_eq!((got.n, got.row0, got.k), (want.n, want.row0, want.k));
            assert_eq!(got.ell_cols, want.ell_cols, "block {r}");
            assert_eq!(got.ell_vals, want.ell_vals, "block {r}");
            assert_eq!(got.coo_rows, want.coo_rows, "block {r}");
            assert_eq!(got.coo_cols, want.coo_cols, "block {r}");
            assert_eq!(got.coo_vals, want.coo_vals, "block {r}");
        }
    }

    /// On one GPU the multi-GPU loop (no communicator) gives the one-GPU backend's
    /// embedding bit for bit, KL history included, with --deterministic.
    fn one_rank_equals_the_one_gpu_backend(gpu) {
        let csr = digits_p();
        let n = csr.rows();
        let dims = 2;
        let params = OptimParams {
            iters: 300,
            learning_rate: 200.0,
            kl_every: 50,
            deterministic: true,
            ..Default::default()
        };
        let mut rng = StdRng::seed_from_u64(7);
        let y0: Vec<f32> = (0..n * dims).map(|_| rng.random_range(-1e-2..1e-2)).collect();
        let repulsion = spec(true);

        let p = P::from_csr(csr.clone()).into_hyb(gpu).unwrap();
        let mut repulse = repulsion.device(gpu, gpu.stream.clone()).unwrap();
        let mut y_dev = gpu.stream.clone_htod(&y0).unwrap();
        let want = optimize_device_observed(
            gpu, &p, Kernel::CAUCHY, &mut repulse, &mut y_dev, dims, &params, &Silent, None,
        )
        .unwrap();
        let want_y = gpu.stream.clone_dtoh(&y_dev).unwrap();

        let mut got_y = y0.clone();
        let (got, _) = optimize_multi(
            1,
            P::from_csr(csr),
            Kernel::CAUCHY,
            &repulsion,
            &mut got_y,
            dims,
            &params,
            &Silent,
            None,
        )
        .unwrap();
        let bits = |y: &[f32]| y.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert!(bits(&want_y) == bits(&got_y), "the embeddings differ");
        assert_eq!(want.kl_history, got.kl_history);
        assert_eq!(want.final_grid, got.final_grid);
    }

    /// What a run over several GPUs refuses before it starts: more GPUs than points allow,
    /// the exact repulsion, more GPUs than the host shows.
    fn multi_gpu_runs_refuse_what_they_cannot_do(gpu) {
        let _ = gpu;
        let params = OptimParams::default();
        let run = |world: usize, repulsion: &RepulsionSpec| {
            let csr = digits_p();
            let mut y = vec![0f32; csr.rows() * 2];
            optimize_multi(
                world,
                P::from_csr(csr),
                Kernel::CAUCHY,
                repulsion,
                &mut y,
                2,
                &params,
                &Silent,
                None,
            )
            .unwrap_err()
            .to_string()
        };
        let exact = RepulsionSpec {
            method: RepulsionMethod::Exact,
            ..spec(false)
        };
        let e = run(2, &exact);
        assert!(e.contains("only the FFT repulsion"), "{e}");
        let e = run(1000, &spec(false));
        assert!(e.contains("1000 GPUs cannot share 1797 points"), "{e}");
        let have = crate::gpu::device_count().unwrap();
        let e = resolve_gpus(Some(have + 1), 10).unwrap_err().to_string();
        assert!(e.contains(&format!("this host shows {have}")), "{e}");
        assert_eq!(resolve_gpus(None, 10).unwrap(), 1);
        assert_eq!(resolve_gpus(None, AUTO_MIN_POINTS).unwrap(), have);
    }
}
