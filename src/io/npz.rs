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
    pub(crate) fn array<T: NpyNumber>(
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
pub fn write_matrix<T: NpyNumber>(path: &Path, shape: &[u64], values: &[T]) -> Result<(), IoError> {
    if extension(path) != "npy" {
        return Err(unknown_extension(path, "a matrix", ".npy"));
    }
    write_atomic(path, |w| write_npy(w, shape, values.iter().copied()))
}

/// A number an `.npy` array holds: npyz's default dtype for it (the machine's byte order)
/// and its bytes in that order.
pub trait NpyNumber: npyz::AutoSerialize + Copy {
    /// Appends the value's bytes in the machine's order.
    fn put(self, out: &mut Vec<u8>);
}

macro_rules! npy_numbers {
    ($($t:ty),*) => {$(
        impl NpyNumber for $t {
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}
npy_numbers!(f32, f64, i64, u32);

/// Bytes of values gathered before each write.
const CHUNK_BYTES: usize = 1 << 20;

/// One array in `.npy` form: npyz's header, then the values' bytes a chunk at a time.
/// (npyz's own writer passes the values on one at a time, a write call each: on the 2-core
/// VM `sgtsne gen --n 2000000 --dim 50` wrote its 400 MB in 1.5 s that way against 0.5 s in
/// chunks, the same bytes.) Values that do not fill `shape` exactly are refused.
pub(crate) fn write_npy<T: NpyNumber>(
    w: &mut (impl Write + ?Sized),
    shape: &[u64],
    values: impl Iterator<Item = T>,
) -> std::io::Result<()> {
    use npyz::WriterBuilder;
    npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .writer(&mut *w)
        .write_header_only()?;
    let expected: u64 = shape.iter().product();
    let (mut buf, mut count) = (Vec::with_capacity(CHUNK_BYTES), 0u64);
    for v in values {
        v.put(&mut buf);
        count += 1;
        if buf.len() >= CHUNK_BYTES {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    if count != expected {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{count} values for an array of shape {shape:?}"),
        ));
    }
    w.write_all(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values over several chunks, in each type, read back by npyz as written.
    #[test]
    fn arrays_over_several_chunks_read_back() {
        fn round_trip<T: NpyNumber + npyz::Deserialize + PartialEq + std::fmt::Debug>(
            values: Vec<T>,
            shape: &[u64],
        ) {
            let mut bytes = Vec::new();
            write_npy(&mut bytes, shape, values.iter().copied()).unwrap();
            let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
            assert_eq!(npy.shape(), shape);
            assert_eq!(npy.into_vec::<T>().unwrap(), values);
        }
        let n = CHUNK_BYTES / 4 + 3;
        round_trip((0..n).map(|i| i as f32 * 0.25).collect(), &[n as u64]);
        round_trip((0..2 * n).map(|i| i as f64 / 3.0).collect(), &[n as u64, 2]);
        round_trip((0..n).map(|i| -(i as i64)).collect(), &[1, n as u64]);
        round_trip((0..n as u32).collect(), &[n as u64]);
        round_trip(Vec::<f32>::new(), &[0, 2]);
    }

    #[test]
    fn values_not_filling_the_shape_are_refused() {
        for count in [5usize, 7] {
            let mut bytes = Vec::new();
            let e = write_npy(&mut bytes, &[2, 3], (0..count).map(|i| i as f32)).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
            assert!(e.to_string().contains(&format!("{count} values")), "{e}");
        }
    }
}
