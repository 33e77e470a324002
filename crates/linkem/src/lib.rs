//! `linkem`: a link emulator for the speedy lab (issue 4).
//!
//! Two layers:
//!
//! - **Pure stages** ([`stage`]) behind one small trait, [`Stage`] (enqueue, dequeue, next
//!   wake-up): constant rate and Mahimahi traces, one-way delay with jitter that never
//!   reorders, Bernoulli and Gilbert-Elliott loss, queues (infinite, drop-tail, drop-head,
//!   CoDel), and a cellular radio (3G UMTS, LTE) shared by both directions. [`Link`]
//!   composes them per direction and counts everything. Time is a parameter ([`Time`]),
//!   randomness comes from a seed: every stage is tested in virtual time.
//! - **IO** ([`Topology`]): a client and a server network namespace, each with a TUN
//!   device, joined by one process that forwards packets through a [`Link`] with
//!   sub-millisecond timing. The topology is torn down on drop, on Ctrl-C/SIGTERM (in the
//!   command line) and, for debris of crashed runs, on the next start.
//!
//! The lab uses it like this:
//!
//! ```no_run
//! use linkem::{LinkConfig, Side, Topology, TopologyConfig};
//! let mut topo = Topology::create(&TopologyConfig { server_addrs: 3, ..Default::default() })?;
//! let mut cfg = LinkConfig::default();
//! cfg.down.server = linkem::Server::Rate(2_000_000);
//! cfg.down.delay = std::time::Duration::from_millis(50);
//! topo.start_link(&cfg)?;
//! let mut server = topo.command(Side::Server, "my-server").spawn()?;
//! let status = topo.command(Side::Client, "my-client").status()?;
//! let counters = topo.stop_link();
//! server.kill()?;
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod bench;
pub mod cli;
pub mod config;
pub mod counters;
pub mod flows;
pub mod io;
pub mod link;
pub mod log;
pub mod packet;
pub mod rng;
pub mod stage;
pub mod time;

pub use config::{parse_rate, Profile, PROFILES};
pub use counters::{Counters, DirCounters};
pub use io::forward::Lateness;
pub use io::topology::{usable_server_addr, Side, Topology, TopologyConfig};
pub use link::{DirectionConfig, Link, LinkConfig};
pub use packet::{Offload, Packet};
pub use stage::loss::LossModel;
pub use stage::queue::{Limit, QueueSpec};
pub use stage::radio::{LteParams, RadioSpec, UmtsParams};
pub use stage::rate::Server;
pub use stage::trace::Trace;
pub use stage::{DropCause, Stage};
pub use time::Time;

/// A direction through the link.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client → server.
    Up,
    /// Server → client.
    Down,
}

impl Direction {
    /// 0 for up, 1 for down.
    pub fn index(self) -> usize {
        self as usize
    }
}
