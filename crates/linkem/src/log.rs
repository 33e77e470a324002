//! Per-packet log in mm-link's text format, so Mahimahi's graphing scripts can read it.
//!
//! ```text
//! # mahimahi mm-link (speedy link) [uplink]
//! # base timestamp: 0
//! <ms> + <bytes>              a packet arrived at the link
//! <ms> - <bytes> <delay ms>   a packet left the link after <delay ms>
//! <ms> d <packets> <bytes>    packets were dropped
//! ```
//!
//! Times are milliseconds since the link started. Delivery-opportunity lines (`#`) are not
//! written.

use crate::time::Time;
use std::io::{self, Write};
use std::time::Duration;

/// A writer of one direction's per-packet log.
pub struct PacketLog {
    out: Box<dyn Write + Send>,
    failed: bool,
}

impl PacketLog {
    /// A log writing to `out`, starting with its header.
    pub fn new(mut out: Box<dyn Write + Send>, direction: &str, description: &str) -> PacketLog {
        let res = writeln!(
            out,
            "# mahimahi mm-link (speedy link) [{direction}] {description}\n# base timestamp: 0"
        );
        PacketLog {
            out,
            failed: res.is_err(),
        }
    }

    fn line(&mut self, args: std::fmt::Arguments<'_>) {
        if !self.failed && self.out.write_fmt(args).is_err() {
            self.failed = true;
        }
    }

    /// Records an arrival.
    pub fn arrival(&mut self, t: Time, bytes: usize) {
        self.line(format_args!("{} + {bytes}\n", t.as_nanos() / 1_000_000));
    }

    /// Records a departure after `delay` in the link.
    pub fn departure(&mut self, t: Time, bytes: usize, delay: Duration) {
        self.line(format_args!(
            "{} - {bytes} {}\n",
            t.as_nanos() / 1_000_000,
            delay.as_millis()
        ));
    }

    /// Records one dropped packet.
    pub fn drop(&mut self, t: Time, bytes: usize) {
        self.line(format_args!("{} d 1 {bytes}\n", t.as_nanos() / 1_000_000));
    }

    /// Flushes buffered lines; reports an earlier write failure, if any.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.failed {
            return Err(io::Error::other("packet log write failed"));
        }
        self.out.flush()
    }
}
