//! Typed column descriptors: a table's columns are listed once, as a `Vec<Column<T>>`, and
//! the CSV writer, the Parquet writer (its schema too) and docs/export.md's check all read
//! that one list.

use std::borrow::Cow;
use std::fmt;

/// A column's value type, the same in CSV (how the text reads) and in Parquet (its
/// physical and logical type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `true`/`false`; Parquet BOOLEAN.
    Bool,
    /// A signed 64-bit integer; Parquet INT64.
    Int,
    /// A 64-bit float; Parquet DOUBLE.
    Float,
    /// UTF-8 text; Parquet BYTE_ARRAY with the STRING logical type.
    String,
}

impl Kind {
    /// The name docs/export.md uses: `bool`, `int`, `float`, `string`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::String => "string",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One value of a column for one record.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell<'a> {
    /// No value: an empty field in CSV, null in Parquet (never a 0).
    Null,
    /// A [`Kind::Bool`] value.
    Bool(bool),
    /// A [`Kind::Int`] value.
    Int(i64),
    /// A [`Kind::Float`] value.
    Float(f64),
    /// A [`Kind::String`] value.
    Str(Cow<'a, str>),
}

/// A value of a record, or `None`.
type ValueFn<T, V> = Box<dyn Fn(&T) -> Option<V>>;
/// Borrowed text of a record, or `None`.
type StrFn<T> = Box<dyn for<'a> Fn(&'a T) -> Option<Cow<'a, str>>>;

/// How a column reads its value off a record; the variant is the column's [`Kind`], so
/// a column cannot say one type and give another.
enum Get<T> {
    Bool(ValueFn<T, bool>),
    Int(ValueFn<T, i64>),
    Float(ValueFn<T, f64>),
    Str(StrFn<T>),
}

/// One column of a table of `T` records: its name, type, unit, whether it can be null,
/// and how its value is read off a record.
pub struct Column<T> {
    /// The column's name (a header in CSV, a field in Parquet).
    pub name: &'static str,
    /// Its unit (`ms`, `µs`, `bytes`, `packets`, `segments`, …), or empty.
    pub unit: &'static str,
    /// Whether a record may have no value (an OPTIONAL Parquet field).
    pub nullable: bool,
    get: Get<T>,
}

/// An integer read off a record: a count or an index, as the table's signed 64-bit
/// integer (a `u64` past `i64::MAX`, which no counter reaches, saturates).
pub trait IntValue: Copy {
    /// As `i64`.
    fn to_i64(self) -> i64;
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl IntValue for $t {
            fn to_i64(self) -> i64 {
                i64::try_from(self).unwrap_or(i64::MAX)
            }
        }
    )*};
}
int_value!(u8, u16, u32, u64, i64, usize);

/// Pins a closure to the higher-ranked signature of [`StrFn`] (the result borrows from
/// the record).
fn str_fn<T, F>(f: F) -> F
where
    F: for<'a> Fn(&'a T) -> Option<Cow<'a, str>>,
{
    f
}

impl<T: 'static> Column<T> {
    fn new(name: &'static str, unit: &'static str, nullable: bool, get: Get<T>) -> Column<T> {
        Column {
            name,
            unit,
            nullable,
            get,
        }
    }

    /// A boolean that every record has.
    pub fn bool(name: &'static str, f: impl Fn(&T) -> bool + 'static) -> Column<T> {
        Column::new(name, "", false, Get::Bool(Box::new(move |t| Some(f(t)))))
    }

    /// A boolean that a record may lack.
    pub fn opt_bool(name: &'static str, f: impl Fn(&T) -> Option<bool> + 'static) -> Column<T> {
        Column::new(name, "", true, Get::Bool(Box::new(f)))
    }

    /// An integer that every record has.
    pub fn int<V: IntValue>(
        name: &'static str,
        unit: &'static str,
        f: impl Fn(&T) -> V + 'static,
    ) -> Column<T> {
        Column::new(
            name,
            unit,
            false,
            Get::Int(Box::new(move |t| Some(f(t).to_i64()))),
        )
    }

    /// An integer that a record may lack.
    pub fn opt_int<V: IntValue>(
        name: &'static str,
        unit: &'static str,
        f: impl Fn(&T) -> Option<V> + 'static,
    ) -> Column<T> {
        Column::new(
            name,
            unit,
            true,
            Get::Int(Box::new(move |t| f(t).map(IntValue::to_i64))),
        )
    }

    /// A float that a record may lack (every float column may: a measurement that did
    /// not happen is null, not a number).
    pub fn opt_float(
        name: &'static str,
        unit: &'static str,
        f: impl Fn(&T) -> Option<f64> + 'static,
    ) -> Column<T> {
        Column::new(name, unit, true, Get::Float(Box::new(f)))
    }

    /// Text that every record has, borrowed from it.
    pub fn str(name: &'static str, f: impl for<'a> Fn(&'a T) -> &'a str + 'static) -> Column<T> {
        let get = str_fn(move |t: &T| Some(Cow::Borrowed(f(t))));
        Column::new(name, "", false, Get::Str(Box::new(get)))
    }

    /// Text that a record may lack, borrowed from it.
    pub fn opt_str(
        name: &'static str,
        f: impl for<'a> Fn(&'a T) -> Option<&'a str> + 'static,
    ) -> Column<T> {
        let get = str_fn(move |t: &T| f(t).map(Cow::Borrowed));
        Column::new(name, "", true, Get::Str(Box::new(get)))
    }

    /// Text made for the record (a value's name: its `Display`), which it may lack.
    pub fn opt_text(name: &'static str, f: impl Fn(&T) -> Option<String> + 'static) -> Column<T> {
        let get = str_fn(move |t: &T| f(t).map(Cow::Owned));
        Column::new(name, "", true, Get::Str(Box::new(get)))
    }

    /// Text made for the record that every record has.
    pub fn text(name: &'static str, f: impl Fn(&T) -> String + 'static) -> Column<T> {
        let get = str_fn(move |t: &T| Some(Cow::Owned(f(t))));
        Column::new(name, "", false, Get::Str(Box::new(get)))
    }
}

impl<T> Column<T> {
    /// The column's value type.
    pub fn kind(&self) -> Kind {
        match self.get {
            Get::Bool(_) => Kind::Bool,
            Get::Int(_) => Kind::Int,
            Get::Float(_) => Kind::Float,
            Get::Str(_) => Kind::String,
        }
    }

    /// The column's value for `record`. A column that is not [`Column::nullable`] never
    /// gives [`Cell::Null`] (its constructors take extractors without `Option`).
    pub fn get<'a>(&self, record: &'a T) -> Cell<'a> {
        let cell = match &self.get {
            Get::Bool(f) => f(record).map(Cell::Bool),
            Get::Int(f) => f(record).map(Cell::Int),
            Get::Float(f) => f(record).map(Cell::Float),
            Get::Str(f) => f(record).map(Cell::Str),
        };
        cell.unwrap_or(Cell::Null)
    }
}

impl<T> fmt::Debug for Column<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Column")
            .field("name", &self.name)
            .field("kind", &self.kind())
            .field("unit", &self.unit)
            .field("nullable", &self.nullable)
            .finish()
    }
}

/// `v` when it is a finite number ≥ 0 (HAR's `-1`, "does not apply", and a load's
/// missing onLoad are null, never a number).
pub fn measured(v: f64) -> Option<f64> {
    (v.is_finite() && v >= 0.0).then_some(v)
}

/// `v` when it is ≥ 0 (HAR's `-1` sizes, "unknown", are null).
pub fn known(v: i64) -> Option<i64> {
    (v >= 0).then_some(v)
}

/// `s` when it is not empty (an empty string the writer meant as "not recorded").
pub fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}
