//! Snapshots: the embedding written every N iterations while it is optimised, one `.npy`
//! per snapshot, so that a run can be watched unfolding (the early phase's clusters forming,
//! then spreading) and drawn as an animation ([`crate::io::plot::animate_gif`]).
//!
//! Files are named by iteration, zero-padded to the width of the last one
//! (`iter_0050.npy` … `iter_1000.npy`), so that they sort in order. Each is written
//! atomically ([`crate::io::write_embedding`]): a run stopped half-way leaves whole files.
//! Y reaches the writer as an [`Observer`] of the host Y in input order (see
//! [`crate::embed::embed_observed`]), so only the iterations asked for cost anything.

use std::path::{Path, PathBuf};

use super::Observer;
use crate::io::{self, IoError};
use crate::{Error, Result};

/// Writes Y every `every` iterations, and after the last one, into a directory.
pub struct Snapshots {
    dir: PathBuf,
    every: usize,
    iters: usize,
    dims: usize,
    /// Digits of the iteration in file names.
    width: usize,
    /// (iteration, file) of each snapshot written so far, in order.
    written: Vec<(usize, PathBuf)>,
}

impl Snapshots {
    /// Snapshots of an n × `dims` embedding optimised for `iters` iterations, every `every`
    /// of them, into `dir`. Checked here, before the run, so that a typo fails at once and
    /// leaves nothing behind: `every` ≥ 1, and `dir` a writable directory, or a path whose
    /// parent is one (the directory is then made at the first snapshot).
    pub fn new(dir: &Path, every: usize, iters: usize, dims: usize) -> Result<Self> {
        if every == 0 {
            return Err(Error::param(
                "snapshot-every",
                "must be at least 1 (iterations between snapshots)",
            ));
        }
        let invalid = |reason: &str| IoError::Invalid {
            path: dir.into(),
            reason: format!("snapshot directory {reason}"),
        };
        let existing = if dir.exists() {
            dir.to_path_buf()
        } else {
            match dir.parent() {
                Some(p) if p.as_os_str().is_empty() => PathBuf::from("."),
                Some(p) if p.is_dir() => p.to_path_buf(),
                _ => return Err(invalid("does not exist, nor does its parent").into()),
            }
        };
        if !existing.is_dir() {
            return Err(invalid("is not a directory").into());
        }
        // Creating (and at once deleting) a file proves write permission; the error's kind
        // says why not (its text repeats the temporary file's name).
        tempfile::Builder::new()
            .prefix(&io::temp_prefix())
            .tempfile_in(&existing)
            .map_err(|e| IoError::Invalid {
                path: existing.clone(),
                reason: format!("cannot write snapshots there ({})", e.kind()),
            })?;
        Ok(Snapshots {
            dir: dir.to_path_buf(),
            every,
            iters,
            dims,
            width: iters.to_string().len().max(4),
            written: Vec::new(),
        })
    }

    /// The snapshots written so far: (iteration, file), in order.
    pub fn written(&self) -> &[(usize, PathBuf)] {
        &self.written
    }
}

impl Observer<[f32]> for Snapshots {
    fn wants(&self, iter: usize) -> bool {
        iter.is_multiple_of(self.every) || iter == self.iters
    }

    fn observe(&mut self, iter: usize, y: &[f32]) -> Result<()> {
        if self.written.is_empty() {
            std::fs::create_dir_all(&self.dir).map_err(|source| IoError::Write {
                path: self.dir.clone(),
                source,
            })?;
        }
        let path = self
            .dir
            .join(format!("iter_{iter:0width$}.npy", width = self.width));
        io::write_embedding(&path, y, self.dims)?;
        self.written.push((iter, path));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_n_and_the_last_in_sorting_names() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("frames");
        let mut s = Snapshots::new(&out, 40, 100, 2).unwrap();
        assert!(!out.exists(), "made before the first snapshot");
        let wanted: Vec<usize> = (1..=100).filter(|&i| s.wants(i)).collect();
        assert_eq!(wanted, [40, 80, 100]);
        for &i in &wanted {
            s.observe(i, &[i as f32, 0.0, 1.0, 2.0]).unwrap();
        }
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["iter_0040.npy", "iter_0080.npy", "iter_0100.npy"]);
        assert_eq!(s.written()[2], (100, out.join("iter_0100.npy")));
        let y = io::read_points(&out.join("iter_0080.npy")).unwrap();
        assert_eq!((y.n, y.d, y.data[0]), (2, 2, 80.0));
        // Wider runs get wider names.
        let s = Snapshots::new(&out, 5000, 20_000, 2).unwrap();
        assert_eq!(s.width, 5);
    }

    #[test]
    fn bad_settings_are_refused_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").unwrap();
        let cases = [
            (dir.path().to_path_buf(), 0, "`snapshot-every`"),
            (
                file.clone(),
                10,
                "f.txt: snapshot directory is not a directory",
            ),
            (file.join("sub"), 10, "does not exist, nor does its parent"),
        ];
        for (path, every, want) in cases {
            let e = Snapshots::new(&path, every, 100, 2)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains(want), "{e}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
