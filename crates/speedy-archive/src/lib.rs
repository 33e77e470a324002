//! # speedy-archive: pages to replay
//!
//! An [`Archive`] holds pages; each page is a tree of objects (the HTML document, what
//! it references, what those reference). Every object records how a browser finds it:
//! at a byte offset of its parent's body (the parser sees the reference there), or after
//! its parent completes plus some compute time (script- or style-initiated). The on-disk
//! format is documented in `docs/archive.md`.

pub mod date;
pub mod export;
pub mod export_replay;
pub mod har;
pub mod import;
pub mod inflate;
pub mod mahimahi;
pub mod model;
pub mod protobuf;
pub mod record;
pub mod rng;
pub mod synth;
/// Absolute http(s) URLs: the workspace's one type, from the `spdy` crate.
pub use spdy::url;
pub mod warc;
pub mod wpr;

pub use model::{Archive, ArchiveError, BodySource, Discovery, Object, ObjectType, Page, Recorded};
