//! A lab run's results as two flat tables, for pandas, R or DuckDB (docs/export.md):
//!
//! * `loads.{csv,parquet}`: one record per row of `results.jsonl`, one column per
//!   [`Row`] field ([`load_columns`]);
//! * `objects.{csv,parquet}`: one record per entry of each load's HAR, read through the
//!   one HAR model ([`speedy_archive::har::Har`]), keyed by the load's experiment,
//!   network, variant, page and run ([`object_columns`]).
//!
//! Each table's columns are listed once, as typed [`Column`] descriptors (name, type,
//! unit, extractor); the CSV writer, the Parquet writer and its schema, and the check of
//! docs/export.md all read those lists. A value a load or an entry does not have is
//! null (an empty CSV field), never 0.
//!
//! Both files are written under temporary names and renamed when complete: an error (a
//! row's HAR missing or not a HAR, which names the file) leaves no partial table.

mod column;
mod csv;
mod loads;
mod objects;
mod parquet;
#[cfg(test)]
mod tests;

pub use column::{Cell, Column, IntValue, Kind};
pub use objects::{LoadKey, Object};

use crate::results::{read_rows, Row};
use speedy_archive::har::Har;
use std::fmt;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The file format of the tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// RFC 4180 CSV with a header line (`.csv`).
    Csv,
    /// Apache Parquet, uncompressed (`.parquet`).
    Parquet,
}

impl Format {
    /// The files' extension, which is also the format's name: `csv`, `parquet`.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Parquet => "parquet",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.extension())
    }
}

impl FromStr for Format {
    type Err = String;

    /// `csv` or `parquet` (any case).
    fn from_str(s: &str) -> Result<Format, String> {
        match s.to_ascii_lowercase().as_str() {
            "csv" => Ok(Format::Csv),
            "parquet" => Ok(Format::Parquet),
            _ => Err(format!(
                "unknown export format {s:?} (expected csv or parquet)"
            )),
        }
    }
}

/// One table written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// Where.
    pub path: PathBuf,
    /// Records written (the header line not counted).
    pub rows: u64,
}

/// What [`export`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    /// The format of both files.
    pub format: Format,
    /// `loads.{csv,parquet}`: one record per load.
    pub loads: Table,
    /// `objects.{csv,parquet}`: one record per HAR entry.
    pub objects: Table,
}

impl fmt::Display for Exported {
    /// `27 loads → out/loads.csv, 1034 objects → out/objects.csv`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} loads → {}, {} objects → {}",
            self.loads.rows,
            self.loads.path.display(),
            self.objects.rows,
            self.objects.path.display()
        )
    }
}

/// The columns of `loads`, in order.
pub fn load_columns() -> Vec<Column<Row>> {
    loads::columns()
}

/// The columns of `objects`, in order.
pub fn object_columns() -> Vec<Column<Object>> {
    objects::columns()
}

/// Reads `dir/results.jsonl` and the HAR each row names, and writes `loads.<ext>` and
/// `objects.<ext>` into `out` (created if missing; files of those names are replaced).
/// A row whose HAR is missing or unreadable is an error naming the HAR and the row, and
/// then neither file is written.
pub fn export(dir: &Path, out: &Path, format: Format) -> Result<Exported, String> {
    let rows = read_rows(&dir.join("results.jsonl"))?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let ext = format.extension();
    let loads = out.join(format!("loads.{ext}"));
    let objects = out.join(format!("objects.{ext}"));
    let partial = |p: &Path| {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        p.with_file_name(format!(".{name}.partial"))
    };
    let (loads_tmp, objects_tmp) = (partial(&loads), partial(&objects));
    let written = write_tables(dir, &rows, format, &loads_tmp, &objects_tmp);
    let renamed = written.and_then(|counts| {
        for (from, to) in [(&loads_tmp, &loads), (&objects_tmp, &objects)] {
            std::fs::rename(from, to).map_err(|e| format!("{}: {e}", to.display()))?;
        }
        Ok(counts)
    });
    match renamed {
        Ok((load_rows, object_rows)) => Ok(Exported {
            format,
            loads: Table {
                path: loads,
                rows: load_rows,
            },
            objects: Table {
                path: objects,
                rows: object_rows,
            },
        }),
        Err(e) => {
            let _ = std::fs::remove_file(&loads_tmp);
            let _ = std::fs::remove_file(&objects_tmp);
            Err(e)
        }
    }
}

/// Writes both tables; gives their record counts.
fn write_tables(
    dir: &Path,
    rows: &[Row],
    format: Format,
    loads_path: &Path,
    objects_path: &Path,
) -> Result<(u64, u64), String> {
    let (load_cols, object_cols) = (load_columns(), object_columns());
    let mut loads = Sink::create(format, &load_cols, loads_path)?;
    let mut objects = Sink::create(format, &object_cols, objects_path)?;
    // The visits of a browsing session are rows of one HAR, next to each other: it is
    // read once for them all.
    let mut last: Option<(PathBuf, Har)> = None;
    for (i, row) in rows.iter().enumerate() {
        loads.write(row)?;
        let which = || {
            format!(
                "results.jsonl row {} ({} / {} / {} / run {})",
                i + 1,
                row.page,
                row.network,
                row.variant,
                row.run
            )
        };
        if row.har.is_empty() {
            return Err(format!("{}: the row names no HAR", which()));
        }
        let path = dir.join(&row.har);
        if last.as_ref().is_none_or(|(p, _)| *p != path) {
            let har = Har::read(&path).map_err(|e| format!("{e} (the HAR of {})", which()))?;
            last = Some((path.clone(), har));
        }
        let har = &last.as_ref().expect("read above").1;
        let objs = objects::of_load(row, har)
            .map_err(|e| format!("{}: {e} (the HAR of {})", path.display(), which()))?;
        for o in &objs {
            objects.write(o)?;
        }
    }
    Ok((loads.finish()?, objects.finish()?))
}

/// A table being written in one of the formats.
enum Sink<'c, T> {
    Csv(csv::CsvWriter<'c, T, BufWriter<File>>, PathBuf),
    Parquet(parquet::ParquetWriter<'c, T, File>, PathBuf),
}

impl<'c, T> Sink<'c, T> {
    fn create(format: Format, columns: &'c [Column<T>], path: &Path) -> Result<Self, String> {
        let at = |e: &dyn fmt::Display| format!("{}: {e}", path.display());
        let file = File::create(path).map_err(|e| at(&e))?;
        Ok(match format {
            Format::Csv => Sink::Csv(
                csv::CsvWriter::new(columns, BufWriter::new(file)).map_err(|e| at(&e))?,
                path.to_path_buf(),
            ),
            Format::Parquet => Sink::Parquet(
                parquet::ParquetWriter::new(columns, file).map_err(|e| at(&e))?,
                path.to_path_buf(),
            ),
        })
    }

    fn write(&mut self, record: &T) -> Result<(), String> {
        match self {
            Sink::Csv(w, path) => w
                .write(record)
                .map_err(|e| format!("{}: {e}", path.display())),
            Sink::Parquet(w, path) => w
                .write(record)
                .map_err(|e| format!("{}: {e}", path.display())),
        }
    }

    fn finish(self) -> Result<u64, String> {
        match self {
            Sink::Csv(w, path) => w.finish().map_err(|e| format!("{}: {e}", path.display())),
            Sink::Parquet(w, path) => w.finish().map_err(|e| format!("{}: {e}", path.display())),
        }
    }
}
