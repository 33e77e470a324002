//! # speedy-lab: experiments, statistics, report
//!
//! Data flow of one experiment: experiment file → runner (namespaces and links from
//! `linkem`, the replay server and the loader as processes) → one HAR and one
//! [`results::Row`] per load (`results.jsonl`) → statistics → `report.html`.

pub mod chromium;
pub mod compare;
pub mod experiment;
pub mod export;
pub mod interrupt;
pub mod merge;
pub mod record;
pub mod report;
pub mod results;
pub mod runner;
pub mod shard;
pub mod sst;
pub mod stats;
pub mod tcpinfo;
pub mod testbed;
pub mod validate;
