//! CSV as RFC 4180 writes it: a header line of the column names, CRLF line ends, and a
//! field quoted (its quotes doubled) when it holds a comma, a quote, CR or LF. A null is
//! an empty field; an empty string is `""`, so a reader that tells them apart can.

use super::column::{Cell, Column};
use std::fmt::Write as _;
use std::io::Write;

/// Writes one table's records as CSV.
pub struct CsvWriter<'c, T, W: Write> {
    columns: &'c [Column<T>],
    out: W,
    line: String,
    rows: u64,
}

impl<'c, T, W: Write> CsvWriter<'c, T, W> {
    /// A writer of `columns` to `out`; writes the header line.
    pub fn new(columns: &'c [Column<T>], out: W) -> std::io::Result<Self> {
        let mut w = CsvWriter {
            columns,
            out,
            line: String::new(),
            rows: 0,
        };
        for (i, c) in columns.iter().enumerate() {
            if i > 0 {
                w.line.push(',');
            }
            push_field(&mut w.line, c.name);
        }
        w.end_line()?;
        Ok(w)
    }

    /// Writes one record.
    pub fn write(&mut self, record: &T) -> std::io::Result<()> {
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                self.line.push(',');
            }
            match c.get(record) {
                Cell::Null => {}
                Cell::Bool(b) => self.line.push_str(if b { "true" } else { "false" }),
                Cell::Int(v) => {
                    let _ = write!(self.line, "{v}");
                }
                // The shortest text that reads back to the same f64, always with a `.` or
                // an exponent (`1.0`, not `1`), so a reader guessing types sees a float.
                Cell::Float(v) => {
                    let _ = write!(self.line, "{v:?}");
                }
                Cell::Str(s) if s.is_empty() => self.line.push_str("\"\""),
                Cell::Str(s) => push_field(&mut self.line, &s),
            }
        }
        self.rows += 1;
        self.end_line()
    }

    /// Flushes and gives the number of records written.
    pub fn finish(mut self) -> std::io::Result<u64> {
        self.out.flush()?;
        Ok(self.rows)
    }

    fn end_line(&mut self) -> std::io::Result<()> {
        self.line.push_str("\r\n");
        self.out.write_all(self.line.as_bytes())?;
        self.line.clear();
        Ok(())
    }
}

/// Appends `s` as one field, quoted if it must be.
pub fn push_field(line: &mut String, s: &str) {
    if s.contains([',', '"', '\r', '\n']) {
        line.push('"');
        for ch in s.chars() {
            if ch == '"' {
                line.push('"');
            }
            line.push(ch);
        }
        line.push('"');
    } else {
        line.push_str(s);
    }
}
