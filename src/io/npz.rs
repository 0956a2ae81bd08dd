//! `.npz` archives (a zip of `.npy` files, uncompressed, as `numpy.savez` writes them) and
//! single `.npy` matrices.

use std::io::Write;
use std::path::Path;

use super::error::{extension, unknown_extension, IoError};
use super::write::{write_atomic, write_atomic_path};

/// Adds arrays to an archive being written ([`write_npz`]).
pub(crate) struct Npz<W: Write + std::io::Seek> {
    zip: zip::ZipWriter<W>,
    options: zip::write::SimpleFileOptions,
}

impl<W: Write + std::io::Seek> Npz<W> {
    /// Adds `name.npy` holding `values` in C order with `shape`.
    pub(crate) fn array<T: npyz::AutoSerialize + npyz::Serialize>(
        &mut self,
        name: &str,
        shape: &[u64],
        values: impl Iterator<Item = T>,
    ) -> std::io::Result<()> {
        self.zip
            .start_file(format!("{name}.npy"), self.options)
            .map_err(std::io::Error::other)?;
        write_npy(&mut self.zip, shape, values)
    }
}

/// Writes an `.npz` at `path` atomically: `fill` adds the arrays; `large` (any array of
/// 4 GiB or more) turns on zip64.
pub(crate) fn write_npz(
    path: &Path,
    large: bool,
    fill: impl FnOnce(&mut Npz<std::io::BufWriter<std::fs::File>>) -> std::io::Result<()>,
) -> Result<(), IoError> {
    if extension(path) != "npz" {
        return Err(unknown_extension(path, "arrays", ".npz"));
    }
    let werr = |e: std::io::Error| IoError::Write {
        path: path.into(),
        source: e,
    };
    write_atomic_path(path, ".npz", |tmp| {
        let file = std::fs::File::create(tmp).map_err(werr)?;
        let mut npz = Npz {
            zip: zip::ZipWriter::new(std::io::BufWriter::with_capacity(1 << 20, file)),
            options: zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored)
                .large_file(large),
        };
        fill(&mut npz).map_err(werr)?;
        let mut w = npz
            .zip
            .finish()
            .map_err(|e| werr(std::io::Error::other(e)))?;
        w.flush().map_err(werr)?;
        w.get_ref().sync_all().map_err(werr)
    })
}

/// Writes `values` as one `.npy` array of `shape` (C order) at `path`, atomically.
pub fn write_matrix<T: npyz::AutoSerialize + npyz::Serialize + Copy>(
    path: &Path,
    shape: &[u64],
    values: &[T],
) -> Result<(), IoError> {
    if extension(path) != "npy" {
        return Err(unknown_extension(path, "a matrix", ".npy"));
    }
    write_atomic(path, |w| write_npy(w, shape, values.iter().copied()))
}

/// One array in `.npy` form.
fn write_npy<T: npyz::AutoSerialize + npyz::Serialize>(
    w: &mut (impl Write + ?Sized),
    shape: &[u64],
    values: impl Iterator<Item = T>,
) -> std::io::Result<()> {
    use npyz::WriterBuilder;
    let mut out = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .writer(w)
        .begin_nd()?;
    out.extend(values)?;
    out.finish()
}
