//! HAR 1.2 in one place: the typed model speedy writes and reads back ([`Har`] and its
//! parts, with the loader's and the export's `_` extensions typed), the schema
//! validator ([`validate`]), and the tolerant reader for HAR files of other tools that
//! `speedy corpus import` uses ([`parse`] → [`HarLog`]). Dates go through
//! [`crate::date`].

mod model;
pub(crate) mod read;
mod validate;

pub use model::*;
pub use read::{parse, HarEntry, HarError, HarInitiator, HarLog, InitiatorKind, SpeedyExt};
pub use validate::validate;
