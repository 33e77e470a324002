//! Parquet through the `parquet` crate's low-level writer ([`SerializedFileWriter`]): the
//! schema is the table's columns (REQUIRED or OPTIONAL by [`Column::nullable`]; INT64,
//! DOUBLE, BOOLEAN, or BYTE_ARRAY as STRING), values are buffered column by column, and
//! every [`ROW_GROUP`] records (and at the end) they go out as a row group, a nullable
//! column's nulls as definition level 0. Pages are uncompressed; each column's unit is
//! in the file's key-value metadata as `unit.<column>`.

use super::column::{Cell, Column, Kind};
use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::io::Write;
use std::sync::Arc;

/// Records per row group.
pub const ROW_GROUP: usize = 64 * 1024;

/// One column's values not yet written (a nullable column's nulls only in `defs`).
enum Values {
    Bool(Vec<bool>),
    Int(Vec<i64>),
    Float(Vec<f64>),
    Str(Vec<ByteArray>),
}

struct Buffer {
    values: Values,
    /// Definition levels (1: a value, 0: null), kept for nullable columns only.
    defs: Vec<i16>,
}

/// Writes one table's records as a Parquet file.
pub struct ParquetWriter<'c, T, W: Write + Send> {
    columns: &'c [Column<T>],
    file: SerializedFileWriter<W>,
    buffers: Vec<Buffer>,
    buffered: usize,
    rows: u64,
}

fn err(e: ParquetError) -> String {
    format!("parquet: {e}")
}

/// The Parquet schema of `columns`.
pub fn schema<T>(columns: &[Column<T>]) -> Result<Type, String> {
    let fields = columns
        .iter()
        .map(|c| {
            let (physical, logical) = match c.kind() {
                Kind::Bool => (Physical::BOOLEAN, None),
                Kind::Int => (Physical::INT64, None),
                Kind::Float => (Physical::DOUBLE, None),
                Kind::String => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            };
            let repetition = if c.nullable {
                Repetition::OPTIONAL
            } else {
                Repetition::REQUIRED
            };
            Type::primitive_type_builder(c.name, physical)
                .with_repetition(repetition)
                .with_logical_type(logical)
                .build()
                .map(Arc::new)
                .map_err(err)
        })
        .collect::<Result<Vec<_>, String>>()?;
    Type::group_type_builder("schema")
        .with_fields(fields)
        .build()
        .map_err(err)
}

impl<'c, T, W: Write + Send> ParquetWriter<'c, T, W> {
    /// A writer of `columns` to `out`; writes the file's header.
    pub fn new(columns: &'c [Column<T>], out: W) -> Result<Self, String> {
        let units = columns
            .iter()
            .filter(|c| !c.unit.is_empty())
            .map(|c| KeyValue::new(format!("unit.{}", c.name), c.unit.to_string()))
            .collect();
        let props = WriterProperties::builder()
            .set_created_by(format!("speedy {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(units))
            .build();
        let file = SerializedFileWriter::new(out, Arc::new(schema(columns)?), Arc::new(props))
            .map_err(err)?;
        let buffers = columns
            .iter()
            .map(|c| Buffer {
                values: match c.kind() {
                    Kind::Bool => Values::Bool(Vec::new()),
                    Kind::Int => Values::Int(Vec::new()),
                    Kind::Float => Values::Float(Vec::new()),
                    Kind::String => Values::Str(Vec::new()),
                },
                defs: Vec::new(),
            })
            .collect();
        Ok(ParquetWriter {
            columns,
            file,
            buffers,
            buffered: 0,
            rows: 0,
        })
    }

    /// Buffers one record (and writes a row group when [`ROW_GROUP`] are buffered).
    pub fn write(&mut self, record: &T) -> Result<(), String> {
        for (c, b) in self.columns.iter().zip(&mut self.buffers) {
            let cell = c.get(record);
            if c.nullable {
                b.defs.push(i16::from(cell != Cell::Null));
            }
            match (cell, &mut b.values) {
                (Cell::Null, _) if c.nullable => {}
                (Cell::Bool(v), Values::Bool(vs)) => vs.push(v),
                (Cell::Int(v), Values::Int(vs)) => vs.push(v),
                (Cell::Float(v), Values::Float(vs)) => vs.push(v),
                (Cell::Str(v), Values::Str(vs)) => vs.push(ByteArray::from(v.as_bytes().to_vec())),
                (cell, _) => {
                    return Err(format!(
                        "column {}: {cell:?} in a column of {}{}",
                        c.name,
                        c.kind(),
                        if c.nullable {
                            ""
                        } else {
                            " that is never null"
                        }
                    ))
                }
            }
        }
        self.buffered += 1;
        self.rows += 1;
        if self.buffered >= ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes what is buffered and the file's footer; gives the number of records.
    pub fn finish(mut self) -> Result<u64, String> {
        // A table with no records has no row group (readers take that as 0 rows).
        if self.buffered > 0 {
            self.flush()?;
        }
        let mut out = self.file.into_inner().map_err(err)?;
        out.flush().map_err(|e| format!("parquet: {e}"))?;
        Ok(self.rows)
    }

    /// Writes the buffered records as one row group.
    fn flush(&mut self) -> Result<(), String> {
        let mut group = self.file.next_row_group().map_err(err)?;
        for (c, b) in self.columns.iter().zip(&mut self.buffers) {
            let mut col = group
                .next_column()
                .map_err(err)?
                .ok_or_else(|| format!("parquet: no column writer for {}", c.name))?;
            let defs = c.nullable.then_some(&b.defs[..]);
            let written = match (&b.values, col.untyped()) {
                (Values::Bool(v), ColumnWriter::BoolColumnWriter(w)) => {
                    w.write_batch(v, defs, None)
                }
                (Values::Int(v), ColumnWriter::Int64ColumnWriter(w)) => {
                    w.write_batch(v, defs, None)
                }
                (Values::Float(v), ColumnWriter::DoubleColumnWriter(w)) => {
                    w.write_batch(v, defs, None)
                }
                (Values::Str(v), ColumnWriter::ByteArrayColumnWriter(w)) => {
                    w.write_batch(v, defs, None)
                }
                _ => {
                    return Err(format!(
                        "parquet: column {}: writer of another type",
                        c.name
                    ))
                }
            };
            written.map_err(err)?;
            col.close().map_err(err)?;
            match &mut b.values {
                Values::Bool(v) => v.clear(),
                Values::Int(v) => v.clear(),
                Values::Float(v) => v.clear(),
                Values::Str(v) => v.clear(),
            }
            b.defs.clear();
        }
        group.close().map_err(err)?;
        self.buffered = 0;
        Ok(())
    }
}
