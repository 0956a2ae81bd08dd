//! cuFFT's kernels compiled in helper processes on a machine's first run.
//!
//! cuFFT has the CUDA driver compile its kernels for each transform shape the first time a
//! machine plans it, 30–730 ms a shape on the H100 and the H200 whatever the length's factors,
//! into the driver's disk cache (`CUDA_CACHE_PATH`, by default `~/.nv/ComputeCache`), from
//! which later processes load them in milliseconds (`benches/history/2026-11-gpu.md`).
//! Compiled in the run's own process, on the side thread that plans the grids ahead
//! ([`crate::gpu::Gpu::plan_ahead`]), it held up that process's other driver calls: a fresh
//! machine's first MNIST run spent 1.7 s of its kNN stage waiting, 2.9× a warm run's wall.
//!
//! Here the plans a run will make that are not known warm are made first by a few helper
//! processes, each with a driver of its own, on cores the run leaves idle while it starts:
//! this program again with a hidden subcommand (the command line's `fft-helper`), or
//! whatever the front end registered ([`set_helper`]). The run's [`super::fft::PlanCache`]
//! waits for a plan's helper before making the plan, and then finds cuFFT's
//! kernels in the driver's cache.
//!
//! A record in sgtsne's cache directory (`fft-plans/driver-<version>-cufft-<version>.txt`,
//! a line a plan) names the plans made warm under that driver and cuFFT, so that a later run
//! starts no helper at all. It is wrong only where the driver's cache was emptied since, or
//! is shared with another kind of GPU; such a run compiles in its own process, as it would
//! without helpers. No helper starts with `CUDA_CACHE_DISABLE=1` (nothing would be kept) or
//! `SGTSNE_FFT_HELPERS=0`; that variable also sets their number (default 8, at most half
//! the cores).

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use cudarc::cufft::sys::cufftType;

/// A plan: nodes per axis, batch and transform type, as [`super::fft::PlanCache::get`] takes.
pub type PlanSpec = (Vec<usize>, usize, cufftType);

/// The environment variable that caps the helpers (0: none).
pub const HELPERS_VAR: &str = "SGTSNE_FFT_HELPERS";

/// Helpers at most by default: a 2-D run plans 8–9 grid shapes, and each helper pays a
/// driver start of its own (0.22–0.31 s on the H100 and H200).
const DEFAULT_HELPERS: usize = 8;

/// The longest a plan waits for its helper before it is made in the run's own process: a
/// helper that hangs costs the run this much once, never the run itself.
const LONGEST_WAIT: Duration = Duration::from_secs(20);

/// How a helper is started: a program and the arguments before the plans.
static HELPER: OnceLock<(PathBuf, Vec<OsString>)> = OnceLock::new();

/// Registers how helpers are started: `program` with `args`, then the device's ordinal and
/// the plans ([`helper_main`] reads them). The command line registers itself with its
/// hidden `fft-helper` subcommand; without a registration no helper starts. The first
/// registration stays.
pub fn set_helper(program: PathBuf, args: Vec<OsString>) {
    let _ = HELPER.set((program, args));
}

/// A plan's key in the process's registry and in the record.
type Key = (Vec<usize>, usize, i32);

fn key(plan: &PlanSpec) -> Key {
    (plan.0.clone(), plan.1, plan.2 as i32)
}

/// The plans helpers were started for in this process, false while a helper may still be
/// making one, true once it has (or its helper ended without it); and the helpers running.
#[derive(Default)]
struct State {
    plans: HashMap<Key, bool>,
    running: usize,
}

struct Registry {
    state: Mutex<State>,
    changed: Condvar,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry {
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
    })
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks `plans` as being made; returns those not marked before.
    fn claim(&self, plans: Vec<PlanSpec>) -> Vec<PlanSpec> {
        let mut state = self.lock();
        plans
            .into_iter()
            .filter(|p| match state.plans.entry(key(p)) {
                std::collections::hash_map::Entry::Occupied(_) => false,
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(false);
                    true
                }
            })
            .collect()
    }

    fn settle(&self, plan: &PlanSpec) {
        self.lock().plans.insert(key(plan), true);
        self.changed.notify_all();
    }

    /// Counts a helper in (`+1`) or out (`-1`).
    fn count(&self, change: isize) {
        let mut state = self.lock();
        state.running = state.running.saturating_add_signed(change);
        self.changed.notify_all();
    }

    /// Blocks while `done` says no, at most `longest`.
    fn wait_until(&self, longest: Duration, done: impl Fn(&State) -> bool) {
        let end = Instant::now() + longest;
        let mut state = self.lock();
        while !done(&state) {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Blocks while a helper may still be making `key`, at most `longest`.
    fn wait(&self, key: &Key, longest: Duration) {
        self.wait_until(longest, |state| state.plans.get(key) != Some(&false));
    }
}

/// Waits, before the run's process makes a plan, for the helper making it (if any).
pub(crate) fn wait(shape: &[usize], batch: usize, ty: cufftType) {
    registry().wait(&(shape.to_vec(), batch, ty as i32), LONGEST_WAIT);
}

/// Waits until this process's helpers have ended (at most 20 s), so that their device
/// memory is free again; whether any was running. A first run's memory check, where the run
/// does not fit beside them, calls it before checking again: each helper holds a context of
/// its own for about a second.
pub fn await_helpers() -> bool {
    let running = registry().lock().running > 0;
    if running {
        registry().wait_until(LONGEST_WAIT, |state| state.running == 0);
    }
    running
}

/// Starts helpers, on device `ordinal`, for the `plans` a run will make that the record
/// does not name as warm and no helper of this process makes already. Does nothing without
/// a registered helper ([`set_helper`]), with the driver's cache off or the helpers capped
/// at 0, or where the CUDA driver or cuFFT is missing (the run then reports that itself).
/// Called before the run's own GPU starts, so that the helpers' drivers start beside it.
pub fn start(plans: Vec<PlanSpec>, ordinal: usize) {
    let Some((program, args)) = HELPER.get() else {
        return;
    };
    // Half the cores at most: the run's own threads load the input and compile kernels.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let helpers = std::env::var(HELPERS_VAR)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_HELPERS.min(cores / 2).max(1));
    let cache_off = std::env::var_os("CUDA_CACHE_DISABLE").is_some_and(|v| v == "1");
    if helpers == 0 || cache_off || plans.is_empty() {
        return;
    }
    let Some(record) = record_path() else {
        return;
    };
    let mut command = Command::new(program);
    command.args(args).arg(ordinal.to_string());
    warm(plans, &record, command, helpers);
}

/// The record of the plans warm under this machine's driver and cuFFT, or `None` where
/// either is missing or there is no cache directory.
fn record_path() -> Option<PathBuf> {
    super::libraries_present().ok()?;
    super::libraries::load(super::libraries::CudaLibrary::Cufft);
    let mut driver = 0;
    // SAFETY: the driver library is present (probed above); cuDriverGetVersion writes one
    // int and needs no cuInit.
    let status = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) };
    if status != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return None;
    }
    let cufft = cudarc::cufft::result::get_version().ok()?;
    let dir = super::compile::cache_dir()?.join("fft-plans");
    Some(dir.join(format!("driver-{driver}-cufft-{cufft}.txt")))
}

/// [`start`]'s work, given the record and the helper's command: claims the plans not in
/// the record, shares them among at most `helpers` processes (in turn, so that each makes
/// some of the small shapes first) and watches each on a thread of its own.
fn warm(plans: Vec<PlanSpec>, record: &Path, command: Command, helpers: usize) {
    let warm: HashSet<String> = std::fs::read_to_string(record)
        .map(|text| text.lines().map(str::to_owned).collect())
        .unwrap_or_default();
    let plans: Vec<PlanSpec> = plans
        .into_iter()
        .filter(|p| !warm.contains(&plan_text(p)))
        .collect();
    let plans = registry().claim(plans);
    if plans.is_empty() {
        return;
    }
    let count = helpers.min(plans.len());
    crate::trace::event(|| format!("cuFFT: {} plans to {count} helpers", plans.len()));
    for h in 0..count {
        let share: Vec<PlanSpec> = plans.iter().skip(h).step_by(count).cloned().collect();
        let mut command = clone_command(&command);
        command.args(share.iter().map(plan_text));
        let record = record.to_path_buf();
        registry().count(1);
        std::thread::spawn(move || {
            watch(command, &share, &record);
            registry().count(-1);
        });
    }
}

/// A new command with `command`'s program and arguments (a `Command` cannot be cloned).
fn clone_command(command: &Command) -> Command {
    let mut copy = Command::new(command.get_program());
    copy.args(command.get_args());
    copy
}

/// Runs one helper over `share`: each plan it reports made goes into the record; when it
/// ends, every plan of its share is settled, made or not, and the run makes the rest.
fn watch(mut command: Command, share: &[PlanSpec], record: &Path) {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    if let Ok(mut child) = child {
        if let Some(out) = child.stdout.take() {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                let made = line
                    .strip_prefix("made ")
                    .and_then(|i| i.parse::<usize>().ok());
                if let Some(plan) = made.and_then(|i| share.get(i)) {
                    // A record that cannot be written costs the next run its helpers only.
                    let _ = remember(record, plan);
                    registry().settle(plan);
                    crate::trace::event(|| format!("cuFFT: a helper made {}", plan_text(plan)));
                }
            }
        }
        let _ = child.wait();
    }
    for plan in share {
        registry().settle(plan);
    }
}

/// Adds `plan` to the record: one line appended in one write, so that helpers of runs side
/// by side never interleave their lines.
fn remember(record: &Path, plan: &PlanSpec) -> std::io::Result<()> {
    if let Some(dir) = record.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(record)?;
    file.write_all(format!("{}\n", plan_text(plan)).as_bytes())
}

/// A plan as the helper's argument and the record's line: `126x126/12/41` (nodes per axis,
/// batch, cuFFT's transform type).
fn plan_text(plan: &PlanSpec) -> String {
    let shape: Vec<String> = plan.0.iter().map(usize::to_string).collect();
    format!("{}/{}/{}", shape.join("x"), plan.1, plan.2 as i32)
}

/// [`plan_text`]'s plan back; only the complex-to-complex types the grids use.
fn parse_plan(text: &str) -> Option<PlanSpec> {
    let mut parts = text.split('/');
    let shape = parts
        .next()?
        .split('x')
        .map(|p| p.parse().ok().filter(|&p: &usize| p > 0))
        .collect::<Option<Vec<usize>>>()?;
    let batch = parts.next()?.parse().ok().filter(|&b: &usize| b > 0)?;
    let ty = match parts.next()?.parse::<i32>().ok()? {
        t if t == cufftType::CUFFT_C2C as i32 => cufftType::CUFFT_C2C,
        t if t == cufftType::CUFFT_Z2Z as i32 => cufftType::CUFFT_Z2Z,
        _ => return None,
    };
    (parts.next().is_none() && (1..=3).contains(&shape.len())).then_some((shape, batch, ty))
}

/// A helper's whole work: `args` are a device's ordinal and plans (`126x126/12/41`: nodes
/// per axis, batch and cuFFT's transform type). Starts the device, makes each plan in turn
/// and prints `made <i>` after plan `i`, so that the run waiting for it may go on; the first
/// failure ends it.
pub fn helper_main(args: &[String]) -> Result<(), String> {
    let (ordinal, plans) = args.split_first().ok_or("no device ordinal")?;
    let ordinal: usize = ordinal
        .parse()
        .map_err(|_| format!("bad device ordinal {ordinal:?}"))?;
    let plans = plans
        .iter()
        .map(|p| parse_plan(p).ok_or_else(|| format!("bad plan {p:?}")))
        .collect::<Result<Vec<_>, _>>()?;
    if !shared_device(ordinal)? {
        return Err(format!(
            "GPU {ordinal} takes one process at a time (its compute mode): a helper would \
             take it from the run"
        ));
    }
    let device = super::probe_device(ordinal)?;
    device.context.bind_to_thread().map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    for (i, (shape, batch, ty)) in plans.iter().enumerate() {
        super::fft::GridFft::new(shape, *batch, *ty).map_err(|e| format!("{e:?}"))?;
        writeln!(out, "made {i}")
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Whether device `ordinal` takes contexts of several processes (the default compute
/// mode), asked of the driver without making a context. A device in exclusive-process mode
/// would let a helper's context shut the run itself out.
fn shared_device(ordinal: usize) -> Result<bool, String> {
    use cudarc::driver::{result::device, sys::CUdevice_attribute};
    super::device_count()?;
    let dev = device::get(ordinal as i32).map_err(|e| e.to_string())?;
    // SAFETY: `dev` came from cuDeviceGet after the driver started (device_count).
    let mode =
        unsafe { device::get_attribute(dev, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_MODE) }
            .map_err(|e| e.to_string())?;
    Ok(mode == cudarc::driver::sys::CUcomputemode::CU_COMPUTEMODE_DEFAULT as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const C2C: cufftType = cufftType::CUFFT_C2C;

    #[test]
    fn plans_read_back_as_written() {
        for plan in [
            (vec![126, 126], 12, C2C),
            (vec![40, 40, 40], 24, cufftType::CUFFT_Z2Z),
            (vec![2048], 3, C2C),
        ] {
            assert_eq!(parse_plan(&plan_text(&plan)), Some(plan.clone()));
        }
        assert_eq!(plan_text(&(vec![126, 126], 12, C2C)), "126x126/12/41");
        for bad in [
            "",
            "126x126/12",
            "126x0/12/41",
            "126/12/41/1",
            "126/12/25",
            "a/1/41",
        ] {
            assert_eq!(parse_plan(bad), None, "{bad:?}");
        }
    }

    /// A shell script standing in for the helper: reports the plans its arguments name
    /// (after the ordinal) as `made`, except any whose shape is 999, where it stops.
    fn fake_helper() -> Command {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            r#"shift; i=0; for p in "$@"; do case $p in 999*) exit 3;; esac; echo "made $i"; i=$((i+1)); done"#,
            "helper",
            "0",
        ]);
        command
    }

    /// Whether `plan` was settled, after waiting for its helper as a run would.
    fn settled(plan: &PlanSpec) -> bool {
        registry().wait(&key(plan), LONGEST_WAIT);
        registry().lock().plans.get(&key(plan)) == Some(&true)
    }

    #[test]
    fn helpers_record_what_they_made_and_settle_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("fft-plans").join("record.txt");
        // Shapes no other test of the process claims.
        let plans: Vec<PlanSpec> = [(vec![70001, 3], 2), (vec![999, 3], 2), (vec![70002, 3], 2)]
            .into_iter()
            .map(|(s, b)| (s, b, C2C))
            .collect();
        // One helper makes all three in turn and stops at the 999.
        warm(plans.clone(), &record, fake_helper(), 1);
        for plan in &plans {
            assert!(settled(plan));
        }
        let text = std::fs::read_to_string(&record).unwrap();
        assert_eq!(text, "70001x3/2/41\n");

        // A second start skips what the record names and what this process claimed.
        let again: Vec<PlanSpec> = vec![(vec![70001, 3], 2, C2C), (vec![70003, 3], 2, C2C)];
        warm(again.clone(), &record, fake_helper(), 4);
        assert!(settled(&again[1]));
        let text = std::fs::read_to_string(&record).unwrap();
        assert_eq!(text, "70001x3/2/41\n70003x3/2/41\n");
    }

    #[test]
    fn awaiting_the_helpers_waits_for_their_end() {
        let dir = tempfile::tempdir().unwrap();
        let go = dir.path().join("go");
        let mut helper = Command::new("sh");
        helper.args([
            "-c",
            r#"while [ ! -e "$1" ]; do sleep 0.01; done; echo "made 0""#,
            "helper",
        ]);
        helper.arg(&go);
        let plan: PlanSpec = (vec![70031, 5], 1, C2C);
        warm(
            vec![plan.clone()],
            &dir.path().join("record.txt"),
            helper,
            1,
        );
        assert!(registry().lock().running > 0);
        std::fs::write(&go, "").unwrap();
        assert!(await_helpers());
        assert_eq!(registry().lock().plans.get(&key(&plan)), Some(&true));
    }

    #[test]
    fn a_helper_that_cannot_start_leaves_the_plans_to_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("record.txt");
        let plan: PlanSpec = (vec![70011, 5], 1, C2C);
        warm(
            vec![plan.clone()],
            &record,
            Command::new(dir.path().join("missing")),
            2,
        );
        assert!(settled(&plan));
        assert!(!record.exists());
    }
}
