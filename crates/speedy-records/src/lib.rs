//! # speedy-records: records with no other home below both of their sides
//!
//! Most records that cross a process boundary live in the crate of their producer, which
//! is already below every reader (docs/contract.md). A few are written by one low crate
//! and embedded in the format of another that does not depend on it: the SCTP counters
//! are counted in `speedy-net` and written into the HAR, whose model is in
//! `speedy-archive`. Those types live here, below both, with nothing but `serde`. So does
//! the one rule every versioned record follows ([`version`]).

pub mod sctp;
pub mod version;
