//! A short fuzz pass over every input reader that needs only stable Rust, so that CI runs
//! one on every change (libFuzzer's longer runs, `scripts/fuzz.sh`, need nightly).
//!
//! For each reader of `tests/fuzz/src/lib.rs` (the libFuzzer targets' own calls, included
//! here), a seeded loop mutates the seeds of `tests/fuzz/seeds/READER/` — bit flips,
//! truncations, splices of two seeds, a repeated span, extreme numbers written over a header
//! field in text and in binary — and reads each result. It asserts what fuzzing asserts: no
//! panic, and no allocation far beyond the input. The allocator of this test binary records,
//! per thread, the largest request made while a fuzz input is read, and refuses any beyond
//! [`REFUSED_ABOVE`], so that a reader sizing a buffer from a lying header fails here (with
//! `memory allocation of N bytes failed`) instead of exhausting the machine. The loop is
//! deterministic: a failure reproduces with the same build.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[path = "fuzz/src/lib.rs"]
mod readers;

/// Mutated inputs per seed file and reader.
const ROUNDS_PER_SEED: usize = 1500;

/// The most one reader call may ask for at once, for an input of `len` bytes: the readers'
/// fixed buffers (1 MiB for text and `.fvecs`) with room to spare, plus a generous multiple
/// of the input (decoding widens values, e.g. `u8` to `f32`).
fn allowed(len: usize) -> usize {
    (16 << 20) + 64 * len
}

/// Requests beyond this are refused while an input is read: far beyond [`allowed`] for any
/// seed, yet small enough that no test machine runs out of memory granting it.
const REFUSED_ABOVE: usize = 1 << 30;

thread_local! {
    /// Whether this thread is reading a fuzz input (only then are requests recorded).
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    /// The largest request this thread made while watched.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// The system allocator, recording the largest request of a watched thread.
struct Recording;

/// Records a request of `size` bytes; false when it is to be refused.
fn record(size: usize) -> bool {
    WATCHING
        .try_with(|watching| {
            if !watching.get() {
                return true;
            }
            let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
            size <= REFUSED_ABOVE
        })
        .unwrap_or(true)
}

// SAFETY: every call is passed to `System` unchanged, or refused with a null pointer, which
// `GlobalAlloc` allows for any request.
unsafe impl GlobalAlloc for Recording {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if record(layout.size()) {
            System.alloc(layout)
        } else {
            std::ptr::null_mut()
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if record(layout.size()) {
            System.alloc_zeroed(layout)
        } else {
            std::ptr::null_mut()
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if record(new_size) {
            System.realloc(ptr, layout, new_size)
        } else {
            std::ptr::null_mut()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Recording = Recording;

/// Runs `f` watched: its result and the largest request it made, or the panic's message.
fn watched<T>(f: impl FnOnce() -> T) -> Result<(T, usize), String> {
    LARGEST.set(0);
    WATCHING.set(true);
    let outcome = catch_unwind(AssertUnwindSafe(f));
    WATCHING.set(false);
    outcome.map(|t| (t, LARGEST.get())).map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// Values that break sizes and counts: zero, one, the edges of the integer types, and
/// numbers no float holds.
const EXTREMES: [&str; 9] = [
    "0",
    "1",
    "-1",
    "4294967295",
    "2147483648",
    "18446744073709551615",
    "99999999999999999999999",
    "1e308",
    "nan",
];

/// One input derived from `seeds[at]` by one to three random edits.
fn mutate(seeds: &[Vec<u8>], at: usize, rng: &mut StdRng) -> Vec<u8> {
    let mut out = seeds[at].clone();
    for _ in 0..rng.random_range(1..=3) {
        let len = out.len();
        let pos = rng.random_range(0..=len);
        match rng.random_range(0..7) {
            0 if len > 0 => {
                let bit = rng.random_range(0..len * 8);
                out[bit / 8] ^= 1 << (bit % 8);
            }
            1 => out.truncate(pos),
            2 => {
                let other = &seeds[rng.random_range(0..seeds.len())];
                let from = rng.random_range(0..=other.len());
                out.truncate(pos);
                out.extend_from_slice(&other[from..]);
            }
            3 if len > 0 => {
                let start = rng.random_range(0..len);
                let end = rng.random_range(start..=len.min(start + 64));
                let span = out[start..end].to_vec();
                out.splice(pos..pos, span);
            }
            4 => {
                // A number in text: over the digits at `pos`, so a count or size changes.
                let digits = out[pos..].iter().take_while(|b| b.is_ascii_digit()).count();
                let value = EXTREMES[rng.random_range(0..EXTREMES.len())].bytes();
                out.splice(pos..pos + digits, value);
            }
            5 if len >= 8 => {
                // A number in binary, over 4 or 8 bytes: a header's dimension or length.
                let value = [u64::MAX, u64::from(u32::MAX), 1 << 31, 1 << 40, 0];
                let bytes = value[rng.random_range(0..value.len())].to_le_bytes();
                let width = if rng.random_bool(0.5) { 4 } else { 8 };
                let start = rng.random_range(0..=len - width);
                out[start..start + width].copy_from_slice(&bytes[..width]);
            }
            _ => {
                if len > 0 {
                    let i = rng.random_range(0..len);
                    out[i] = [0, 0xff, b'\n', b',', b'"', b' ', b'#', b'%'][rng.random_range(0..8)];
                }
            }
        }
    }
    out
}

/// The seed files of one reader, in name order.
fn seeds(reader: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fuzz/seeds/{reader}"));
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// Every reader, on its seeds and on `ROUNDS_PER_SEED` mutations of each: no panic, no
/// allocation beyond [`allowed`]. A failing input is written to the temporary directory and
/// named in the message.
#[test]
fn every_reader_survives_mutated_seeds() {
    let mut failures = Vec::new();
    for (reader, read) in readers::READERS {
        let seeds = seeds(reader);
        assert!(!seeds.is_empty(), "no seeds for {reader}");
        let mut rng = StdRng::seed_from_u64(17);
        let inputs = (0..seeds.len()).flat_map(|at| {
            let first = seeds[at].clone();
            let mutants: Vec<_> = (0..ROUNDS_PER_SEED)
                .map(|_| mutate(&seeds, at, &mut rng))
                .collect();
            std::iter::once(first).chain(mutants)
        });
        for (k, input) in inputs.enumerate() {
            let problem = match watched(|| read(&input)) {
                Ok(((), largest)) if largest <= allowed(input.len()) => continue,
                Ok(((), largest)) => format!(
                    "asked for {largest} bytes at once for a {}-byte input",
                    input.len()
                ),
                Err(message) => format!("panicked: {message}"),
            };
            let kept = std::env::temp_dir().join(format!("sgtsne-fuzz-{reader}-{k}"));
            std::fs::write(&kept, &input).unwrap();
            failures.push(format!("{reader}: {problem} (input: {})", kept.display()));
            break;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Reads the crafted `bytes` as the file `name` with `read`, watched: the error it must give
/// (containing `want`), and no request beyond [`allowed`] on the way.
fn refused_in_proportion<T: std::fmt::Debug, E: std::fmt::Display>(
    name: &str,
    bytes: &[u8],
    read: impl FnOnce(&Path) -> Result<T, E>,
    want: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let (result, largest) = watched(|| read(&path)).unwrap_or_else(|p| panic!("{name}: {p}"));
    let e = result.expect_err(name).to_string();
    assert!(e.contains(want), "{name}: {e}");
    assert!(
        largest <= allowed(bytes.len()),
        "{name}: asked for {largest} bytes at once for {} bytes",
        bytes.len()
    );
}

/// A Matrix Market size line that declares a billion entries or a trillion nodes in a file of
/// a few bytes: refused without sizing anything by the claim.
#[test]
fn mtx_sizes_follow_the_file_not_its_header() {
    let banner = "%%MatrixMarket matrix coordinate real general\n";
    refused_in_proportion(
        "lying_count.mtx",
        format!("{banner}3 3 1000000000\n1 2 1\n").as_bytes(),
        sgtsne::io::read_graph,
        "1000000000 entries declared, 1 found",
    );
    refused_in_proportion(
        "lying_nodes.mtx",
        format!("{banner}1000000000000 1000000000000 1\n1 2 1\n").as_bytes(),
        sgtsne::io::read_graph,
        "more than half of the nodes would have no edge",
    );
}

/// A model whose counts multiply past `usize` (2^63 points of 2 features: the products wrap
/// to 0, matching its empty arrays): refused as damaged, not loaded as a map of 2^63 points.
#[test]
fn model_counts_that_overflow_are_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overflow.sgtsne");
    let model = sgtsne::transform::Model {
        metric: sgtsne::prep::Metric::Euclidean,
        d_in: 2,
        pca: None,
        n: 1 << 63,
        d: 2,
        points: Vec::new().into(),
        dims: 2,
        y: Vec::new(),
        perplexity: 30.0,
        dof: 1.0,
    };
    model.save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    refused_in_proportion(
        "overflow.sgtsne",
        &bytes,
        sgtsne::transform::Model::load,
        "damaged model: the reference points hold 0 values, expected more than memory holds",
    );
}

/// An `.npy` of version 3 whose preamble declares a 662 MB header in a file of 128 bytes (the
/// input libFuzzer found): refused as truncated before the header is read, for points and
/// labels alike.
#[test]
fn npy_header_longer_than_the_file_is_truncated() {
    let mut bytes = b"\x93NUMPY\x03\x00".to_vec();
    bytes.extend(0x277b_0076u32.to_le_bytes());
    bytes.extend(b"'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }".repeat(2));
    let want =
        "header is cut short: it declares 662372482 bytes with its preamble, the file has 128";
    refused_in_proportion("long_header.npy", &bytes, sgtsne::io::read_points, want);
    refused_in_proportion("long_header.npy", &bytes, sgtsne::io::read_labels, want);
}

/// A header whose brackets nest deeply (libFuzzer's input: 18 open braces in a 160-byte file
/// kept the header parser busy past its timeout) is refused at once, for points and labels.
#[test]
fn npy_header_nested_brackets_are_refused_at_once() {
    let header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': (1, {}2)}}",
        "{".repeat(18)
    );
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend([0u8; 8]);
    let want = "header nests brackets 20 deep";
    refused_in_proportion("nested.npy", &bytes, sgtsne::io::read_points, want);
    refused_in_proportion("nested.npy", &bytes, sgtsne::io::read_labels, want);
}

/// `.npy` headers whose shape is not what NumPy writes or multiplies past 2^64, both found
/// by fuzzing (`npyz` read `1+2` as a size and multiplied the sizes unchecked), and a second
/// `shape` key: refused by their shape. NumPy's own shapes pass.
#[test]
fn npy_shapes_numpy_would_not_write_are_refused() {
    let npy = |shape: &str| {
        let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes.extend([0u8; 8]);
        bytes
    };
    for (shape, dims) in [
        ("(2, 18446744073709551615)", "2, 18446744073709551615"),
        (
            "(2, 000000016255846121278595981+2222222)",
            "2, 000000016255846121278595981+2222222",
        ),
        ("(1, 2), 'shape': (2, -1)", "2, -1"),
        ("(2, 1e3)", "2, 1e3"),
    ] {
        let want = format!("its shape ({dims}) is not a tuple of whole numbers");
        let bytes = npy(shape);
        refused_in_proportion("bad.npy", &bytes, sgtsne::io::read_points, &want);
        refused_in_proportion("bad.npy", &bytes, sgtsne::io::read_labels, &want);
    }
    for shape in ["(2,)", "(1, 2)", "(2, 1)"] {
        let e = sgtsne::io::read_points_bytes(&npy(shape), "good.npy").map(|_| ());
        assert!(
            e.as_ref()
                .map_or_else(|e| !e.to_string().contains("shape"), |_| true),
            "{shape}: {e:?}"
        );
    }
}

/// A sweep configuration whose `iters` has extra digits (the input this pass found) or whose
/// fixed-grid range asks for 10^12 sizes: refused by key, before either sizes a list.
#[test]
fn sweep_lists_are_not_sized_by_a_typo() {
    let seed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/seeds/sweep_toml/sweep-2d-refine.toml");
    let text = std::fs::read_to_string(seed).unwrap();
    let cases = [
        (
            "iters = 1000",
            "iters = 14294967295",
            "`optimise.sample_every` measures 95299780 times",
        ),
        (
            "fixed = [1024, 1152, 1280, 1536, 2048]",
            "fixed = { from = 1024, to = 2048, count = 1000000000000 }",
            "`grid.fixed` range needs 1 ≤ from ≤ to ≤",
        ),
    ];
    for (from, to, want) in cases {
        assert!(text.contains(from), "{from}");
        refused_in_proportion(
            "typo.toml",
            text.replace(from, to).as_bytes(),
            sgtsne::sweep::SweepConfig::from_file,
            want,
        );
    }
}
