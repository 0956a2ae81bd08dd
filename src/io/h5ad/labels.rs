//! Labels from an `obs` column of an `.h5ad` (`--labels obs:COLUMN`).

use std::path::Path;

use hdf5_pure::{DType, File};

use super::{encoding_type, h5_error, listing, members, open};
use crate::io::error::IoError;
use crate::io::Labels;

/// The name given to points whose categorical code is −1 (pandas' missing value).
const MISSING: &str = "NA";

/// Reads the labels in column `column` of the AnnData file's `obs` data frame: a
/// categorical (codes into categories, which may be strings or integers; code −1 is
/// missing and becomes "NA"), or a string, integer or boolean column. A column that is not
/// there is an error listing the columns there are.
pub fn read_h5ad_labels(path: &Path, column: &str) -> Result<Labels, IoError> {
    let file = open(path)?;
    let element = format!("obs/{column}");
    let columns = columns_of(&file);
    if !columns.iter().any(|c| c == column) {
        return Err(IoError::format(
            path,
            None,
            format!("no obs column `{column}`; obs has: {}", listing(&columns)),
        ));
    }
    let what = format!("obs['{column}']");
    if file.dataset(&element).is_ok() {
        return column_values(&file, path, &element, &what);
    }
    match encoding_type(&file, &element).as_deref() {
        Some("categorical") => categorical(&file, path, &element, &what),
        other => Err(IoError::format(
            path,
            None,
            format!(
                "{what} is a `{}`; labels need a categorical, string, integer or boolean column",
                other.unwrap_or("group")
            ),
        )),
    }
}

/// The columns of the AnnData file's `obs` data frame (its index left out), sorted.
pub fn read_h5ad_obs_columns(path: &Path) -> Result<Vec<String>, IoError> {
    Ok(columns_of(&open(path)?))
}

fn columns_of(file: &File) -> Vec<String> {
    members(file, "obs")
        .into_iter()
        .filter(|c| c != "_index" && c != "__categories")
        .collect()
}

/// The values of a floating-point `obs` column (`n_counts`, a score), NaN where pandas has
/// a missing value; other columns are labels ([`read_h5ad_labels`]).
pub fn read_h5ad_numbers(path: &Path, column: &str) -> Result<Vec<f64>, IoError> {
    let file = open(path)?;
    let what = format!("obs['{column}']");
    let ds = file
        .dataset(&format!("obs/{column}"))
        .map_err(|e| h5_error(path, &what, e))?;
    match ds
        .dtype()
        .map_err(|e| h5_error(path, &format!("{what}: datatype"), e))?
    {
        DType::F32 | DType::F64 => ds
            .read_f64()
            .map_err(|e| h5_error(path, &format!("{what}: reading"), e)),
        other => Err(IoError::Dtype {
            path: path.into(),
            dtype: format!("{other} in {what}"),
            reason: "numbers must be floats",
        }),
    }
}

/// The values of a categorical: each point's category by its code.
fn categorical(file: &File, path: &Path, element: &str, what: &str) -> Result<Labels, IoError> {
    let codes = file
        .dataset(&format!("{element}/codes"))
        .and_then(|d| d.read_i64())
        .map_err(|e| h5_error(path, &format!("{what}: codes"), e))?;
    let categories = file
        .dataset(&format!("{element}/categories"))
        .map_err(|e| h5_error(path, &format!("{what}: categories"), e))?;
    let names: Vec<String> = match raw(&categories, path, what)? {
        Raw::Strings(v) => v,
        Raw::Ints(v) => v.iter().map(|x| x.to_string()).collect(),
    };
    let mut values = Vec::with_capacity(codes.len());
    for (i, &c) in codes.iter().enumerate() {
        match c {
            -1 => values.push(MISSING.to_string()),
            c if c >= 0 && (c as usize) < names.len() => values.push(names[c as usize].clone()),
            c => {
                return Err(IoError::format(
                    path,
                    None,
                    format!(
                        "{what}: code {c} of row {} (1-based) is not one of the {} categories",
                        i + 1,
                        names.len()
                    ),
                ))
            }
        }
    }
    Ok(Labels::from_strings(&values))
}

/// A plain column: strings, integers or booleans.
fn column_values(file: &File, path: &Path, element: &str, what: &str) -> Result<Labels, IoError> {
    let ds = file.dataset(element).map_err(|e| h5_error(path, what, e))?;
    Ok(match raw(&ds, path, what)? {
        Raw::Strings(v) => Labels::from_strings(&v),
        Raw::Ints(v) => Labels::from_ints(&v),
    })
}

/// Label values as stored.
enum Raw {
    Strings(Vec<String>),
    Ints(Vec<i128>),
}

fn raw(ds: &hdf5_pure::Dataset, path: &Path, what: &str) -> Result<Raw, IoError> {
    let dtype = ds
        .dtype()
        .map_err(|e| h5_error(path, &format!("{what}: datatype"), e))?;
    let err = |e| h5_error(path, &format!("{what}: reading"), e);
    match dtype {
        DType::String | DType::VariableLengthString => {
            ds.read_string().map(Raw::Strings).map_err(err)
        }
        DType::I8 | DType::I16 | DType::I32 | DType::I64 | DType::U8 | DType::U16 | DType::U32 => {
            Ok(Raw::Ints(
                ds.read_i64()
                    .map_err(err)?
                    .into_iter()
                    .map(i128::from)
                    .collect(),
            ))
        }
        DType::U64 => Ok(Raw::Ints(
            ds.read_u64()
                .map_err(err)?
                .into_iter()
                .map(i128::from)
                .collect(),
        )),
        // h5py stores numpy booleans as an enum {FALSE, TRUE} over i8.
        DType::Enum(names) if names.len() == 2 => Ok(Raw::Strings(
            ds.read_i64()
                .map_err(err)?
                .into_iter()
                .map(|v| if v == 0 { "False" } else { "True" }.to_string())
                .collect(),
        )),
        other => Err(IoError::Dtype {
            path: path.into(),
            dtype: format!("{other} in {what}"),
            reason: "labels must be strings, integers, booleans or a categorical of them",
        }),
    }
}
