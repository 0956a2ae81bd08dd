//! `sgtsne view`: an embedding, its labels and metadata → one HTML page (or a local server),
//! every input and the output checked before the page is built.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use sgtsne::io::{self, IoError, OutputKind};
use sgtsne::view::{self, Column, Map};

use super::files::{display_name, is_h5ad, obs_column};

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// The embedding: n rows of 1–3 coordinates (.npy, .csv, .tsv, .txt), or an .h5ad whose
    /// obsm holds it (--key); every obs column of an .h5ad becomes metadata.
    pub embedding: PathBuf,
    /// Write the map here (.html): one file with everything in it, to open in a browser.
    #[arg(
        short,
        long,
        value_name = "MAP.html",
        required_unless_present = "serve"
    )]
    pub output: Option<PathBuf>,
    /// Labels to colour by (.npy, a one-column .csv/.tsv/.txt, or obs:COLUMN of an .h5ad
    /// embedding); repeat for several. The first one colours the map when it opens.
    #[arg(long, value_name = "LABELS")]
    pub labels: Vec<PathBuf>,
    /// A table of metadata with a header row (.csv or .tsv), one row per point: each column
    /// can colour the map and shows on hover. Numbers are a colour scale, unless whole and
    /// at most 32 distinct (cluster ids), which are categories, as text is.
    #[arg(long, value_name = "TABLE.csv")]
    pub meta: Option<PathBuf>,
    /// The obsm key of an .h5ad embedding.
    #[arg(long, default_value = "X_tsne")]
    pub key: String,
    /// The page's title [default: the embedding's file name].
    #[arg(long)]
    pub title: Option<String>,
    /// Serve the map on 127.0.0.1 (coordinates as binary, not base64) and print its URL;
    /// Ctrl-C stops it. For maps too large for one file; with -o the file is written too.
    #[arg(long)]
    pub serve: bool,
    /// The port to serve on (0: any free port).
    #[arg(long, default_value_t = 8000, requires = "serve")]
    pub port: u16,
    /// Nothing on stderr but errors (the URL of --serve is printed on stdout).
    #[arg(short, long)]
    pub quiet: bool,
}

/// Checks the output, reads the embedding and its columns, builds the map, writes it and
/// serves it as asked.
pub fn run(args: ViewArgs) -> Result<()> {
    let start = Instant::now();
    // Only an .html can be written, so the output can never be one of the inputs.
    if let Some(out) = &args.output {
        io::check_output_path(out, OutputKind::Map)?;
    }
    let (y, dims) = read_embedding(&args.embedding, &args.key)?;
    let columns = read_columns(&args)?;
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| display_name(&args.embedding));
    let map = Map::new(&y, dims, &columns, &title)
        .with_context(|| format!("{}", args.embedding.display()))?;
    drop(y);
    if let Some(out) = &args.output {
        view::write_map(out, &map)?;
        if !args.quiet {
            eprintln!(
                "{}: {} points, {} columns to colour by, {:.1} MB in {:.2} s",
                out.display(),
                map.len(),
                columns.len(),
                std::fs::metadata(out).map_or(0, |m| m.len()) as f64 / 1e6,
                start.elapsed().as_secs_f64()
            );
        }
    }
    if args.serve {
        drop(columns);
        view::serve(&map, args.port, |url| {
            // A reader of the URL that has gone (`| head -1`) does not stop the server.
            let _ = writeln!(std::io::stdout(), "{url}");
            if !args.quiet {
                eprintln!("serving {} points on {url} (Ctrl-C stops)", map.len());
            }
        })?;
    }
    Ok(())
}

/// The embedding's coordinates and their number per point: an .h5ad's obsm[`key`], or any
/// points file.
fn read_embedding(path: &Path, key: &str) -> Result<(Vec<f32>, usize)> {
    let points = if is_h5ad(path) {
        let rep = io::h5ad::Rep::Obsm(key.to_string());
        match io::h5ad::read_h5ad_points(path, &rep)?.matrix {
            io::h5ad::H5adMatrix::Dense(p) => p,
            io::h5ad::H5adMatrix::Sparse(rows) => rows.to_dense(),
        }
    } else {
        io::read_points(path)?
    };
    Ok((points.data.into_vec(), points.d))
}

/// The columns in the order of the "colour by" list: each --labels, then the .h5ad's
/// other obs columns, then the --meta table's.
fn read_columns(args: &ViewArgs) -> Result<Vec<Column>> {
    let h5ad = is_h5ad(&args.embedding).then_some(args.embedding.as_path());
    let mut columns = Vec::new();
    for path in &args.labels {
        columns.push(match (obs_column(path), h5ad) {
            (Some(name), Some(file)) => obs(file, name)?,
            (Some(_), None) => anyhow::bail!(
                "--labels {}: obs columns need an .h5ad embedding",
                path.display()
            ),
            (None, _) => Column::categorical(column_name(path), io::read_labels(path)?),
        });
    }
    if let Some(file) = h5ad {
        for name in io::h5ad::read_h5ad_obs_columns(file)? {
            if !columns.iter().any(|c: &Column| c.name == name) {
                columns.push(obs(file, &name)?);
            }
        }
    }
    if let Some(table) = &args.meta {
        for (name, values) in io::read_table(table)? {
            columns.push(Column::from_text(name, values));
        }
    }
    Ok(columns)
}

/// The obs column `name` of `file`: labels, or numbers for a float column.
fn obs(file: &Path, name: &str) -> Result<Column> {
    match io::h5ad::read_h5ad_labels(file, name) {
        Ok(labels) => Ok(Column::from_labels(name, labels)),
        Err(IoError::Dtype { .. }) => Ok(Column::numeric(
            name,
            io::h5ad::read_h5ad_numbers(file, name)?,
        )),
        Err(e) => Err(e.into()),
    }
}

/// A labels file's column name: its file name without the extension.
fn column_name(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| display_name(path), |s| s.to_string_lossy().into_owned())
}
