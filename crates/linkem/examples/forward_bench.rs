//! Forwarding ceiling of the emulator with no limit set: 1500-byte UDP packets, then one
//! bulk TCP stream, client → server namespace. Needs root.
//!
//! ```text
//! cargo run --release -p linkem --example forward_bench -- [SECS]
//! ```
//! (`speedy link --bench SECS` runs the same measurement.)

use linkem::{LinkConfig, Topology, TopologyConfig};
use std::time::Duration;

fn main() -> std::io::Result<()> {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let mut topo = Topology::create(&TopologyConfig::default())?;
    topo.start_link(&LinkConfig::default())?;
    let report = linkem::bench::run(&mut topo, Duration::from_secs_f64(secs), || false)?;
    print!("{report}");
    let c = topo.stop_link();
    print!("counters:\n{c}");
    Ok(())
}
