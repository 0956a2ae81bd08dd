use sgtsne::backend::BackendKind;
use sgtsne::embed::{embed, EmbedParams, Embedding, Input};
use sgtsne::optim::{AutoIters, AutoStop, OptimParams};
use sgtsne::progress::Silent;

use crate::cli::{backends, fails_cleanly_with, sgtsne, stderr};

/// The built-in digits embedded on `backend` for `iters` iterations, or under `auto`.
fn digits(backend: BackendKind, iters: usize, auto: Option<AutoIters>) -> Embedding {
    let params = EmbedParams {
        backend,
        optim: OptimParams {
            iters,
            ..Default::default()
        },
        auto_iters: auto,
        ..Default::default()
    };
    let input = Input::Points(sgtsne::demo::points().unwrap());
    embed(input, "digits", None, &params, &Silent).unwrap()
}

/// A rule no map meets: every window is recorded, the run goes to its cap.
fn unreachable(cap: usize) -> Option<AutoIters> {
    Some(AutoIters {
        cap,
        stability: 1.0,
        kl_drop: 0.0,
        kl_flat: 0.0,
    })
}

/// A run of fixed length reports the stability of its last tenth, and looking at the map
/// does not change it: the same run under an `auto` rule that never holds, which looks at
/// Y at every window up to the same count, ends bit for bit where it does.
#[test]
fn a_fixed_count_is_measured_and_unchanged() {
    for kind in backends() {
        let fixed = digits(kind, 600, None);
        let o = &fixed.report.optimise;
        assert_eq!(o.iterations, 600, "{kind:?}");
        let s = o.stability.expect("the last tenth's stability");
        assert_eq!((s.from, s.to, s.sample), (540, 600, 1797), "{kind:?}");
        assert!(s.kept > 0.0 && s.kept <= 1.0, "{kind:?}: {s:?}");
        assert_eq!(o.auto_stop, None);
        assert!(o.stability_history.is_empty());
        if kind == BackendKind::Cpu {
            let watched = digits(kind, 600, unreachable(600));
            assert_eq!(watched.report.optimise.auto_stop, Some(AutoStop::Cap));
            assert!(watched.report.optimise.stability_history.len() > 5);
            assert_eq!(fixed.y, watched.y, "a watched run moved differently");
        }
    }
}

/// `--iters auto` stops the digits (a small, quickly settled map) well before its cap,
/// after the early phase, at a window that met the rule, at the same iteration in every
/// run (on the cpu backend, bit for bit); with a rule that cannot hold it runs to the cap.
#[test]
fn auto_stops_a_settled_map_and_respects_its_cap() {
    for kind in backends() {
        let rule = AutoIters::default();
        let e = digits(kind, 0, Some(AutoIters { cap: 5000, ..rule }));
        let o = &e.report.optimise;
        assert_eq!(o.auto_stop, Some(AutoStop::Converged), "{kind:?}");
        assert!(
            o.iterations > 250 && o.iterations < 5000,
            "{kind:?}: {}",
            o.iterations
        );
        let last = o.stability_history.last().unwrap();
        assert!(last.kept >= rule.stability, "{kind:?}: {last:?}");
        assert!(last.kl_drop.unwrap() <= rule.kl_drop, "{kind:?}: {last:?}");
        assert_eq!(e.report.params.optim.iters, 5000);
        if kind == BackendKind::Cpu {
            // The stop is where the window's verdict was due, not where its search ended.
            let again = digits(kind, 0, Some(AutoIters { cap: 5000, ..rule }));
            assert_eq!(again.report.optimise.iterations, o.iterations);
            assert_eq!(again.y, e.y, "an auto run did not repeat");
        }

        let capped = digits(kind, 0, unreachable(400));
        let o = &capped.report.optimise;
        assert_eq!(
            (o.iterations, o.auto_stop),
            (400, Some(AutoStop::Cap)),
            "{kind:?}"
        );
    }
}

/// The coarse step is `--iters auto`'s and off for a fixed count unless given; given, it
/// changes the descent; off, a run is the same bit for bit as with β = 0 given.
#[test]
fn the_coarse_step_is_autos_and_can_be_given() {
    let run = |iters: usize, auto: Option<AutoIters>, coarse_boost: f32| {
        let params = EmbedParams {
            backend: BackendKind::Cpu,
            optim: OptimParams {
                iters,
                coarse_boost,
                coarse_cell: 5.0,
                ..Default::default()
            },
            auto_iters: auto,
            ..Default::default()
        };
        let input = Input::Points(sgtsne::demo::points().unwrap());
        embed(input, "digits", None, &params, &Silent).unwrap()
    };
    let plain = digits(BackendKind::Cpu, 500, None);
    assert_eq!(plain.report.params.optim.coarse_boost, 0.0);
    assert_eq!(run(500, None, 0.0).y, plain.y);
    let boosted = run(500, None, 3.0);
    assert_ne!(boosted.y, plain.y);
    assert!(boosted.y.iter().all(|v| v.is_finite()));

    let mut auto = OptimParams::default();
    sgtsne::optim::stability::auto_schedule(&mut auto);
    assert_eq!((auto.momentum_late, auto.coarse_boost), (0.9, 3.0));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("y.json");
    demo_run(
        &["--iters", "auto", "--report", out.to_str().unwrap()],
        &dir.path().join("y.npy"),
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(report["params"]["optim"]["coarse_boost"], 3.0);
    demo_run(
        &[
            "--iters",
            "auto",
            "--coarse-boost",
            "0",
            "--report",
            out.to_str().unwrap(),
        ],
        &dir.path().join("y.npy"),
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(report["params"]["optim"]["coarse_boost"], 0.0);
}

/// `sgtsne embed --demo --backend cpu ARGS -o OUT`, which must succeed; its stderr.
fn demo_run(args: &[&str], out: &std::path::Path) -> String {
    let mut all = vec!["embed", "--demo", "--backend", "cpu"];
    all.extend_from_slice(args);
    all.extend(["-o", out.to_str().unwrap()]);
    let o = sgtsne(&all);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    err
}

/// The CLI: `--iters auto` says why it stopped; a run at its cap warns; bad values name
/// their flag.
#[test]
fn auto_iterations_at_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("y.npy");
    let err = demo_run(&["--iters", "auto"], &out);
    assert!(err.contains("--iters auto: stopped after"), "{err}");
    assert!(err.contains("nearest neighbours in the map"), "{err}");

    let unreachable = ["--auto-stability", "1", "--auto-kl-drop", "0"];
    let err = demo_run(
        &[&["--iters", "auto", "--iters-cap", "300"][..], &unreachable].concat(),
        &out,
    );
    assert!(err.contains("stopped at its cap, 300 iterations"), "{err}");
    assert!(
        err.contains("warning: the map was still changing at the cap"),
        "{err}"
    );

    for (args, needle) in [
        (&["--iters", "many"][..], "expected `auto` or a number"),
        (
            &["--iters", "auto", "--auto-stability", "1.5"],
            "auto-stability",
        ),
        (&["--iters", "auto", "--auto-kl-drop", "-1"], "auto-kl-drop"),
        (&["--iters", "auto", "--iters-cap", "0"], "iters-cap"),
        (&["--iters", "auto", "--auto-kl-flat", "-1"], "auto-kl-flat"),
        (&["--coarse-boost", "-1"], "coarse-boost"),
        (&["--coarse-cell", "0"], "coarse-cell"),
    ] {
        let bad = dir.path().join("bad.npy");
        let mut all = vec![
            "embed",
            "--demo",
            "--backend",
            "cpu",
            "-o",
            bad.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        fails_cleanly_with(&all, &bad, &[needle]);
    }
}
