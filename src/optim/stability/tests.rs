use super::*;
use rand::Rng;

/// A cloud of `n` points in 2-D drawn with `seed`.
fn cloud(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..2 * n).map(|_| rng.random_range(-10.0..10.0)).collect()
}

/// Runs `watch` as the optimisers do over `iters` steps: asked to stop before each, shown
/// the KL every 50 and Y where it asks; returns the steps taken.
fn drive(
    watch: &mut Watch,
    iters: usize,
    y_at: impl Fn(usize) -> Vec<f32>,
    kl_at: impl Fn(usize) -> f64,
) -> usize {
    drive_every(watch, iters, y_at, kl_at, 50)
}

/// [`drive`] with the KL every `kl_every` steps.
fn drive_every(
    watch: &mut Watch,
    iters: usize,
    y_at: impl Fn(usize) -> Vec<f32>,
    kl_at: impl Fn(usize) -> f64,
    kl_every: usize,
) -> usize {
    for iter in 0..iters {
        if watch.stop(iter).is_some() {
            return iter;
        }
        if iter.is_multiple_of(kl_every) {
            watch.kl(iter, kl_at(iter));
        }
        if watch.wants(iter + 1) {
            watch.observe(iter + 1, &y_at(iter + 1)).unwrap();
        }
    }
    iters
}

fn auto(cap: usize) -> Option<AutoIters> {
    Some(AutoIters {
        cap,
        ..Default::default()
    })
}

#[test]
fn kept_counts_the_neighbours_still_there() {
    assert_eq!(kept(&[1, 2, 3, 4], &[2, 1, 4, 3], 2), 1.0);
    assert_eq!(kept(&[1, 2, 3, 4], &[1, 5, 6, 7], 2), 0.25);
    assert_eq!(kept(&[], &[], 2), 1.0);
}

#[test]
fn kl_drop_spans_the_reports_inside_the_window() {
    let kls = [(800, 3.0), (900, 2.2), (950, 2.1), (1000, 2.0)];
    let d = kl_drop(&kls, 900, 1000).unwrap();
    assert!((d - 0.1).abs() < 1e-12, "{d}");
    // A window shorter than the reports' spacing: the last step's fall, scaled to it.
    let d = kl_drop(&kls, 960, 990).unwrap();
    assert!((d - 0.1 / 2.1 / 50.0 * 30.0).abs() < 1e-12, "{d}");
    assert_eq!(kl_drop(&kls[..1], 800, 900), None);
    assert_eq!(kl_drop(&[], 0, 10), None);
}

/// A run of fixed length looks at Y twice, at 90 % and at the end, and a map that did not
/// move kept every neighbour; it never stops the run.
#[test]
fn a_fixed_run_measures_its_last_tenth() {
    let y = cloud(500, 1);
    let mut watch = Watch::new(None, (500, 2), (1000, 250), None, 0);
    let wanted: Vec<usize> = (1..=1000).filter(|&i| watch.wants(i)).collect();
    assert_eq!(wanted, [900, 1000]);
    assert_eq!(drive(&mut watch, 1000, |_| y.clone(), |_| 2.0), 1000);
    let watched = watch.finish(None);
    assert_eq!(watched.stopped, None);
    assert_eq!(watched.history.len(), 1);
    let s = watched.history[0];
    assert_eq!((s.from, s.to, s.sample, s.kept), (900, 1000, 500, 1.0));
    assert_eq!(s.kl_drop, Some(0.0));
    assert!(s.settled());
}

/// A map whose points all move keeps almost none of its neighbours: not settled.
#[test]
fn a_moving_map_is_not_settled() {
    let mut watch = Watch::new(None, (3000, 2), (1000, 250), None, 7);
    drive(&mut watch, 1000, |i| cloud(3000, i as u64), |_| 2.0);
    let s = watch.finish(None).history[0];
    assert_eq!(s.sample, SAMPLE);
    assert!(s.kept < 0.05 && !s.settled(), "{s:?}");
}

/// The last checkpoint's rows, searched by the caller in the Y it saw, give the window
/// the watch's own search gives; another Y, or another k, is not taken.
#[test]
fn the_last_rows_can_come_from_the_caller() {
    let watched = |end_rows: bool| {
        let mut watch = Watch::new(None, (3000, 2), (1000, 250), None, 7);
        drive(&mut watch, 1000, |i| cloud(3000, i as u64 % 3), |_| 2.0);
        let y = cloud(3000, 1000 % 3);
        assert!(watch.end_sample(&cloud(3000, 5), STABILITY_K).is_none());
        assert!(watch.end_sample(&y, STABILITY_K + 1).is_none());
        let sample = watch.end_sample(&y, STABILITY_K).expect("the end's Y");
        let rows = crate::quality::embedding_neighbors_of(&y, 2, &sample, STABILITY_K);
        watch.finish(end_rows.then_some(rows)).history
    };
    let (given, searched) = (watched(true), watched(false));
    assert_eq!(given, searched);
    assert!(given[0].kept < 0.5, "{given:?}");
}

/// `--iters auto` stops a settled map soon after the early phase, and says why.
#[test]
fn auto_stops_a_converged_problem() {
    let y = cloud(800, 2);
    let mut watch = Watch::new(None, (800, 2), (5000, 250), auto(5000), 0);
    let done = drive(&mut watch, 5000, |_| y.clone(), |_| 2.0);
    let watched = watch.finish(None);
    // Settled at the checkpoint of 275 (window 250–275), stopped a quarter window on.
    assert_eq!(done, 275 + 7);
    assert_eq!(watched.stopped, Some(AutoStop::Converged));
    let first = watched.history[0];
    assert_eq!((first.from, first.to, first.kept), (250, 275, 1.0));
}

/// A run that does not repeat anyway goes on while the search runs, and stops where the
/// verdict comes, never before it was due.
#[test]
fn an_unrepeatable_run_does_not_wait_for_the_verdict() {
    let y = cloud(800, 2);
    let mut watch = Watch::new(None, (800, 2), (5000, 250), auto(5000), 0).repeatable(false);
    // Iterations of 0.1 ms, so that the search (well under a millisecond) ends long before
    // the cap.
    let slow = |_| {
        std::thread::sleep(std::time::Duration::from_micros(100));
        2.0
    };
    let done = drive_every(&mut watch, 5000, |_| y.clone(), slow, 1);
    assert!((275 + 7..5000).contains(&done), "stopped at {done}");
    assert_eq!(watch.finish(None).stopped, Some(AutoStop::Converged));
}

/// …runs on while the KL still falls, even where Y is still, up to its cap…
#[test]
fn auto_runs_on_while_the_kl_falls() {
    let y = cloud(800, 3);
    let mut watch = Watch::new(None, (800, 2), (2000, 250), auto(2000), 0);
    let done = drive(
        &mut watch,
        2000,
        |_| y.clone(),
        |i| 2.0 + 1e3 / (i as f64 + 1.0),
    );
    let watched = watch.finish(None);
    assert_eq!(done, 2000);
    assert_eq!(watched.stopped, Some(AutoStop::Cap));
    // Checkpoints a tenth of the run apart, from the end of the early phase to the cap.
    let to: Vec<usize> = watched.history.iter().map(|s| s.to).collect();
    assert_eq!(to[..4], [275, 303, 334, 368]);
    assert!(watched
        .history
        .iter()
        .all(|s| s.to - s.from == s.from.div_ceil(10)));
}

/// …and while the neighbourhoods still change, where the KL is flat.
#[test]
fn auto_runs_on_while_the_map_moves() {
    let mut watch = Watch::new(None, (800, 2), (1500, 250), auto(1500), 0);
    let done = drive(&mut watch, 1500, |i| cloud(800, i as u64), |_| 2.0);
    assert_eq!(done, 1500);
    assert_eq!(watch.finish(None).stopped, Some(AutoStop::Cap));
}

/// The cloud of 800 points with a seeded 3 % of them moved elsewhere at each `iter`: most
/// neighbourhoods stay (about 90 %), some reshuffle every window.
fn reshuffling(iter: usize) -> Vec<f32> {
    let mut y = cloud(800, 5);
    let mut rng = StdRng::seed_from_u64(iter as u64);
    for _ in 0..24 {
        let i = rng.random_range(0..800);
        y[2 * i] = rng.random_range(-10.0..10.0);
        y[2 * i + 1] = rng.random_range(-10.0..10.0);
    }
    y
}

/// A map whose neighbourhoods have formed but keep reshuffling a little (the coarse step's
/// at scale) stops once its KL is flat, and says so; while the KL still falls it runs on.
#[test]
fn auto_stops_a_formed_map_whose_kl_is_flat() {
    let mut watch = Watch::new(None, (800, 2), (3000, 250), auto(3000), 0);
    let done = drive(&mut watch, 3000, reshuffling, |_| 2.0);
    let watched = watch.finish(None);
    assert_eq!(watched.stopped, Some(AutoStop::Flattened));
    let first = watched.history[0];
    assert!(first.kept >= FORMED && first.kept < 0.97, "{first:?}");
    assert_eq!(done, 275 + 7);
    // The same map with a KL still falling 1.5–3 % a window (2 + 50 / √i): the cap.
    let mut watch = Watch::new(None, (800, 2), (3000, 250), auto(3000), 0);
    let falling = |i: usize| 2.0 + 50.0 / (i as f64 + 1.0).sqrt();
    assert_eq!(drive(&mut watch, 3000, reshuffling, falling), 3000);
    assert_eq!(watch.finish(None).stopped, Some(AutoStop::Cap));
}

/// The caller's observer still sees what it asks for, and its stop comes first.
#[test]
fn the_inner_observer_is_served() {
    struct Every100(Vec<usize>);
    impl Observer<[f32]> for Every100 {
        fn wants(&self, iter: usize) -> bool {
            iter.is_multiple_of(100)
        }
        fn observe(&mut self, iter: usize, _y: &[f32]) -> Result<()> {
            self.0.push(iter);
            Ok(())
        }
        fn stop(&self, iter: usize) -> Option<Stop> {
            (iter == 950).then_some(Stop::Finish)
        }
    }
    let mut inner = Every100(Vec::new());
    let y = cloud(100, 4);
    let mut watch = Watch::new(Some(&mut inner), (100, 2), (1000, 250), None, 0);
    assert_eq!(drive(&mut watch, 1000, |_| y.clone(), |_| 2.0), 950);
    assert_eq!(watch.finish(None).history, []);
    assert_eq!(inner.0, (1..=9).map(|i| i * 100).collect::<Vec<_>>());
}

#[test]
fn rules_out_of_range_name_their_flag() {
    let bad = |r: AutoIters| r.validate().unwrap_err().to_string();
    let d = AutoIters::default();
    assert!(bad(AutoIters { cap: 0, ..d }).contains("iters-cap"));
    assert!(bad(AutoIters {
        stability: 1.5,
        ..d
    })
    .contains("auto-stability"));
    assert!(bad(AutoIters { kl_drop: -0.1, ..d }).contains("auto-kl-drop"));
    assert!(bad(AutoIters {
        kl_flat: f64::NAN,
        ..d
    })
    .contains("auto-kl-flat"));
    d.validate().unwrap();
}
