use sgtsne::embed::{embed, EmbedParams, Input, PointOrder};
use sgtsne::progress::Silent;
use sgtsne::{demo, io::Labels, quality};

fn digits() -> (Input, Labels) {
    (
        Input::Points(demo::points().unwrap()),
        demo::labels().unwrap(),
    )
}

fn cpu(dims: usize) -> EmbedParams {
    EmbedParams {
        dims,
        backend: sgtsne::backend::BackendKind::Cpu,
        ..Default::default()
    }
}

#[test]
fn digits_2d_separates_the_classes() {
    let (input, labels) = digits();
    let out = embed(input, "digits", Some(&labels), &cpu(2), &Silent).unwrap();
    let r = &out.report;
    let acc = r.quality.knn_accuracy_10.unwrap();
    eprintln!(
        "digits 2-D: 10-NN accuracy {acc:.4}, KL {:.4}, {:.2} s",
        r.optimise.final_kl, r.seconds.total
    );
    assert!(acc >= 0.95, "10-NN accuracy {acc}");
    assert!(out.y.iter().all(|v| v.is_finite()));
    assert_eq!(out.y.len(), 1797 * 2);
    // The default locality order is internal: Y comes back in input order, where the input's
    // labels give the accuracy the report measured in the internal order.
    assert_eq!(r.params.order, Some(PointOrder::Locality));
    let nb = quality::embedding_neighbors(&out.y, 2, 10);
    assert_eq!(quality::knn_accuracy(&nb, 10, &labels.codes), acc);
    // KL falls over the run and is reported every 50 iterations and at the end.
    let kl = &r.optimise.kl_history;
    assert_eq!(kl.len(), 1000 / 50 + 1);
    assert!(kl.last().unwrap().1 < kl[5].1, "KL did not fall: {kl:?}");
}

#[test]
fn digits_1d_and_3d_embed_well() {
    for (dims, floor) in [(1, 0.80), (3, 0.95)] {
        let (input, labels) = digits();
        // A 32-node grid keeps the 3-D run (8 FFT patterns on p³ nodes) quick on 2 cores.
        let params = EmbedParams {
            grid: (dims == 3).then_some(sgtsne::repulse::GridSpec::Fixed(32)),
            ..cpu(dims)
        };
        let out = embed(input, "digits", Some(&labels), &params, &Silent).unwrap();
        let acc = out.report.quality.knn_accuracy_10.unwrap();
        eprintln!(
            "digits {dims}-D: 10-NN accuracy {acc:.4}, KL {:.4}",
            out.report.optimise.final_kl
        );
        assert!(acc >= floor, "{dims}-D accuracy {acc}");
        assert_eq!(out.y.len(), 1797 * dims);
    }
}

#[test]
fn same_seed_same_embedding() {
    let params = EmbedParams {
        optim: sgtsne::optim::OptimParams {
            iters: 100,
            early_exaggeration_iters: 50,
            ..Default::default()
        },
        ..cpu(2)
    };
    let a = embed(
        Input::Points(demo::points().unwrap()),
        "a",
        None,
        &params,
        &Silent,
    )
    .unwrap();
    let b = embed(
        Input::Points(demo::points().unwrap()),
        "b",
        None,
        &params,
        &Silent,
    )
    .unwrap();
    assert_eq!(a.y, b.y);
}

#[test]
fn graph_with_an_isolated_node_embeds_finitely() {
    // Two rings of 60 nodes joined by one edge, plus node 120 with no edge at all.
    let n = 121;
    let mut t = sprs::TriMat::new((n, n));
    for ring in 0..2 {
        for i in 0..60 {
            let a = ring * 60 + i;
            let b = ring * 60 + (i + 1) % 60;
            t.add_triplet(a, b, 1.0);
            t.add_triplet(b, a, 1.0);
        }
    }
    t.add_triplet(0, 60, 0.5);
    t.add_triplet(60, 0, 0.5);
    let params = EmbedParams {
        optim: sgtsne::optim::OptimParams {
            iters: 300,
            early_exaggeration_iters: 100,
            ..Default::default()
        },
        ..cpu(2)
    };
    let out = embed(Input::Graph(t.to_csr()), "rings", None, &params, &Silent).unwrap();
    assert!(
        out.y.iter().all(|v| v.is_finite()),
        "non-finite coordinates"
    );
    assert!(out.report.optimise.final_kl.is_finite());
}

/// The locality order is internal: a run in it equals the run in input order up to the
/// rounding of sums taken in another order (same P, Y back in input order). Ten iterations:
/// the early exaggeration amplifies rounding differences about tenfold every five iterations
/// (measured: 2.5e-7 of the scale after 5, 5e-6 after 10, 0.1 after 20), so a longer run
/// would compare chaos, not the order.
#[test]
fn locality_order_equals_input_order_up_to_rounding() {
    let run = |order| {
        let params = EmbedParams {
            order: Some(order),
            optim: sgtsne::optim::OptimParams {
                iters: 10,
                early_exaggeration_iters: 10,
                ..Default::default()
            },
            ..cpu(2)
        };
        embed(
            Input::Points(demo::points().unwrap()),
            "digits",
            None,
            &params,
            &Silent,
        )
        .unwrap()
    };
    let (local, input) = (run(PointOrder::Locality), run(PointOrder::Input));
    assert_eq!(local.report.p_nnz, input.report.p_nnz);
    let scale = input.y.iter().fold(0f32, |m, v| m.max(v.abs()));
    let diff = local
        .y
        .iter()
        .zip(&input.y)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    eprintln!("largest difference {diff:e} at scale {scale:e}");
    assert!(diff <= 1e-4 * scale, "{diff} against a scale of {scale}");
}

/// `--knn approx` on the cpu backend: the host IVF, its recall in the report; on the small
/// demo every cell is probed, so it finds the exact neighbours.
#[test]
fn approx_knn_on_the_cpu_reports_its_recall() {
    let (input, labels) = digits();
    let params = EmbedParams {
        knn: sgtsne::embed::KnnMethod::Approx,
        ..cpu(2)
    };
    let out = embed(input, "digits", Some(&labels), &params, &Silent).unwrap();
    let knn = out.report.knn.as_ref().unwrap();
    assert_eq!(knn.method, "approx");
    let recall = knn.recall_sample.unwrap();
    assert!(recall >= 0.999, "recall {recall}");
    assert!(knn.ivf.is_some());
    let acc = out.report.quality.knn_accuracy_10.unwrap();
    assert!(acc >= 0.95, "10-NN accuracy {acc}");
}
