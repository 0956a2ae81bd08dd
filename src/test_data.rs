//! The real data sets a few tests and timings read where they are at hand (MNIST 70k as
//! `.npy`: `mnist70k_pca50_f32.npy`, `mnist70k_784_u8.npy`, `mnist70k_labels_u8.npy`), found
//! in the folder `SGTSNE_DATA_DIR` names, so that no machine's path is written into the
//! code; without the variable or the file they skip, saying why.

use std::path::PathBuf;

/// The variable naming the folder of the data files.
const DATA_DIR: &str = "SGTSNE_DATA_DIR";

/// The file `name` in the folder `SGTSNE_DATA_DIR` names, or `None` after saying on stderr
/// why the caller skips: the variable is unset or the file is not there.
pub(crate) fn data_file(name: &str) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os(DATA_DIR) else {
        eprintln!("skipped: set {DATA_DIR} to the folder holding {name}");
        return None;
    };
    let path = PathBuf::from(dir).join(name);
    if !path.is_file() {
        eprintln!("skipped: {} not found ({DATA_DIR})", path.display());
        return None;
    }
    Some(path)
}
