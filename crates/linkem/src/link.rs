//! A whole emulated link: both directions' pipelines, the shared radio, counters and an
//! optional per-packet log. Pure: time is a parameter.

use crate::counters::Counters;
use crate::flows::FlowFilter;
use crate::log::PacketLog;
use crate::packet::Packet;
use crate::stage::delay::Delay;
use crate::stage::loss::{Loss, LossModel};
use crate::stage::queue::QueueSpec;
use crate::stage::radio::{Radio, RadioSpec};
use crate::stage::rate::{Bottleneck, Server};
use crate::stage::reorder::Reorder;
use crate::stage::{DropCause, Dropped, Drops, Pipeline, Stage};
use crate::time::Time;
use crate::Direction;
use std::collections::VecDeque;
use std::time::Duration;

/// Settings of one direction.
#[derive(Clone, Debug)]
pub struct DirectionConfig {
    /// What drains the bottleneck (rate, trace or unlimited).
    pub server: Server,
    /// The bottleneck queue.
    pub queue: QueueSpec,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Extra random delay in `[0, jitter)`; never reorders.
    pub jitter: Duration,
    /// Random loss.
    pub loss: LossModel,
    /// Reordering: each packet held back by `.1` with probability `.0`, after the delay.
    pub reorder: Option<(f64, Duration)>,
}

impl Default for DirectionConfig {
    fn default() -> Self {
        DirectionConfig {
            server: Server::Unlimited,
            queue: QueueSpec::Infinite,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: LossModel::None,
            reorder: None,
        }
    }
}

/// Settings of a whole link.
#[derive(Clone, Debug, Default)]
pub struct LinkConfig {
    /// Client → server.
    pub up: DirectionConfig,
    /// Server → client.
    pub down: DirectionConfig,
    /// Optional cellular radio shared by both directions.
    pub radio: Option<RadioSpec>,
    /// Seed of every random choice (loss, jitter).
    pub seed: u64,
    /// Carry only the flows the client side opens after the link starts (a TCP
    /// connection from its SYN going up, a UDP flow from its first datagram going up;
    /// see [`crate::flows`]); every other packet is discarded and counted as stale
    /// ([`crate::DirCounters::stale`]). The lab sets it: each load is a fresh client,
    /// and the previous load's connections (the client kernel's retransmitted FINs, the
    /// servers' data, FINs and QUIC probes to a client that is gone) must not reach the
    /// new load's link, where they would take capacity or, on a cellular link, promote
    /// the radio ahead of the load's first packet.
    pub client_flows_only: bool,
}

impl LinkConfig {
    /// Whether the link only delays packets, and by the same amount each way: no rate,
    /// trace, queue limit, jitter, loss, reordering or radio. Such a link treats a train
    /// of segments that arrive together exactly as one packet, so it may carry TCP
    /// super-packets whole (segmentation offload) instead of segment by segment.
    pub fn is_transparent(&self) -> bool {
        self.radio.is_none()
            && [&self.up, &self.down].iter().all(|d| {
                matches!(d.server, Server::Unlimited)
                    && d.queue == QueueSpec::Infinite
                    && d.jitter.is_zero()
                    && d.loss == LossModel::None
                    && d.reorder.is_none_or(|(p, _)| p <= 0.0)
            })
    }

    /// The settings of `dir`.
    pub fn dir(&self, dir: Direction) -> &DirectionConfig {
        match dir {
            Direction::Up => &self.up,
            Direction::Down => &self.down,
        }
    }
}

struct Dir {
    /// Packets held by the radio, with their release times (non-decreasing).
    gate: VecDeque<(Time, Packet)>,
    last_release: Time,
    pipeline: Pipeline,
}

/// Both directions of an emulated link.
///
/// Each direction is: radio gate → loss → bottleneck (queue + rate or trace) → delay.
/// Loss comes first, so lost packets do not use link capacity (as with Mahimahi's
/// `mm-loss` outside `mm-link`).
///
/// Call order: `enqueue(dir, now, ..)` as packets arrive, `dequeue(dir, now)` until it
/// returns `None`, then sleep until `next_wakeup()` or the next arrival; `now` never
/// decreases. Dropped packets are counted and kept for [`Link::take_dropped`].
pub struct Link {
    dirs: [Dir; 2],
    radio: Option<Radio>,
    drops: Drops,
    dropped: Vec<Packet>,
    counters: Counters,
    logs: [Option<PacketLog>; 2],
    transparent: bool,
    flows: Option<FlowFilter>,
}

fn build_pipeline(c: &DirectionConfig, seed: u64) -> Pipeline {
    let mut stages: Vec<Box<dyn Stage>> = Vec::new();
    if c.loss != LossModel::None {
        stages.push(Box::new(Loss::new(c.loss, seed)));
    }
    stages.push(Box::new(Bottleneck::new(c.queue, c.server.clone())));
    if !c.delay.is_zero() || !c.jitter.is_zero() {
        stages.push(Box::new(Delay::with_jitter(
            c.delay,
            c.jitter,
            seed ^ 0x5555_5555,
        )));
    }
    if let Some((p, hold)) = c.reorder.filter(|(p, _)| *p > 0.0) {
        stages.push(Box::new(Reorder::new(p, hold, seed ^ 0x3333_3333)));
    }
    Pipeline::new(stages)
}

impl Link {
    /// A link built from `cfg`.
    pub fn new(cfg: &LinkConfig) -> Link {
        let mk = |d: Direction| Dir {
            gate: VecDeque::new(),
            last_release: Time::ZERO,
            pipeline: build_pipeline(
                cfg.dir(d),
                cfg.seed
                    .wrapping_mul(0x9e37_79b9)
                    .wrapping_add(d.index() as u64 + 1),
            ),
        };
        Link {
            dirs: [mk(Direction::Up), mk(Direction::Down)],
            radio: cfg.radio.map(Radio::new),
            drops: Vec::new(),
            dropped: Vec::new(),
            counters: Counters::default(),
            logs: [None, None],
            transparent: cfg.is_transparent(),
            flows: cfg.client_flows_only.then(FlowFilter::new),
        }
    }

    /// Writes a per-packet log of `dir` in mm-link's format.
    pub fn set_log(&mut self, dir: Direction, log: PacketLog) {
        self.logs[dir.index()] = Some(log);
        self.transparent = false;
    }

    /// Whether packets may cross the link as TCP super-packets: its configuration is
    /// [transparent](LinkConfig::is_transparent) and no per-packet log is kept (a log
    /// line is one packet on the wire).
    pub fn carries_super_packets(&self) -> bool {
        self.transparent
    }

    fn account_drops(&mut self, dir: Direction) {
        for Dropped { at, cause, packet } in self.drops.drain(..) {
            let c = self.counters.dir_mut(dir);
            c.drops[cause.index()] += packet.segments();
            c.drop_bytes[cause.index()] += packet.wire_len();
            if let Some(log) = &mut self.logs[dir.index()] {
                log.drop(at, packet.len());
            }
            self.dropped.push(packet);
        }
    }

    /// A packet arrives at the link going `dir` at `now`.
    pub fn enqueue(&mut self, dir: Direction, now: Time, packet: Packet) {
        let c = self.counters.dir_mut(dir);
        if let Some(f) = &mut self.flows {
            if !f.admit(dir, &packet.data) {
                c.stale += packet.segments();
                self.dropped.push(packet);
                return;
            }
        }
        c.reads += 1;
        c.packets_in += packet.segments();
        c.bytes_in += packet.wire_len();
        if let Some(log) = &mut self.logs[dir.index()] {
            log.arrival(now, packet.len());
        }
        let mut packet = packet;
        packet.arrived = now;
        let d = &mut self.dirs[dir.index()];
        match &mut self.radio {
            Some(radio) => {
                let release = radio.admit(dir, now, packet.len()).max(d.last_release);
                d.last_release = release;
                self.counters.promotions = radio.promotions();
                if release <= now && d.gate.is_empty() {
                    d.pipeline.enqueue(now, packet, &mut self.drops);
                } else {
                    d.gate.push_back((release, packet));
                }
            }
            None => d.pipeline.enqueue(now, packet, &mut self.drops),
        }
        self.account_drops(dir);
    }

    /// The next packet of `dir` due at or before `now`, with its exact departure time.
    pub fn dequeue(&mut self, dir: Direction, now: Time) -> Option<(Time, Packet)> {
        let d = &mut self.dirs[dir.index()];
        while let Some((t, _)) = d.gate.front() {
            if *t > now {
                break;
            }
            let (t, p) = d.gate.pop_front().expect("front exists");
            d.pipeline.enqueue(t, p, &mut self.drops);
        }
        let out = d.pipeline.dequeue(now, &mut self.drops);
        self.account_drops(dir);
        if let Some((t, p)) = &out {
            let c = self.counters.dir_mut(dir);
            c.packets_out += p.segments();
            c.bytes_out += p.wire_len();
            if let Some(log) = &mut self.logs[dir.index()] {
                log.departure(*t, p.len(), *t - p.arrived);
            }
        }
        out
    }

    /// The earliest instant at which `dequeue` may return a packet.
    pub fn next_wakeup(&self) -> Option<Time> {
        self.dirs
            .iter()
            .flat_map(|d| [d.gate.front().map(|x| x.0), d.pipeline.next_wakeup()])
            .flatten()
            .min()
    }

    /// Counts a packet the IO layer failed to deliver (and keeps its buffer for reuse).
    pub fn tun_write_failed(&mut self, dir: Direction, at: Time, packet: Packet) {
        let c = self.counters.dir_mut(dir);
        c.packets_out -= packet.segments();
        c.bytes_out -= packet.wire_len();
        self.drops.push(Dropped {
            at,
            cause: DropCause::TunWrite,
            packet,
        });
        self.account_drops(dir);
    }

    /// Takes the buffers of dropped packets (for reuse).
    pub fn take_dropped(&mut self) -> std::vec::Drain<'_, Packet> {
        self.dropped.drain(..)
    }

    /// The counters so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Counts packets found waiting at the devices when the link started and discarded
    /// ([`crate::DirCounters::stale`]).
    pub fn count_stale(&mut self, up: u64, down: u64) {
        self.counters.up.stale += up;
        self.counters.down.stale += down;
    }

    /// Flushes the per-packet logs.
    pub fn flush_logs(&mut self) -> std::io::Result<()> {
        for l in self.logs.iter_mut().flatten() {
            l.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::radio::UmtsParams;
    use crate::stage::testutil::pkt;

    fn run_one(link: &mut Link, dir: Direction, at: Time) -> Time {
        link.enqueue(dir, at, pkt(1, 100));
        let mut now = at;
        loop {
            if let Some((t, _)) = link.dequeue(dir, now) {
                return t;
            }
            now = link.next_wakeup().expect("packet pending");
        }
    }

    #[test]
    fn rate_then_delay_per_direction() {
        let cfg = LinkConfig {
            up: DirectionConfig {
                server: Server::Rate(8_000_000),
                delay: Duration::from_millis(10),
                ..Default::default()
            },
            down: DirectionConfig {
                delay: Duration::from_millis(30),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut l = Link::new(&cfg);
        // 100 bytes at 8 Mbit/s = 100 µs, then 10 ms.
        assert_eq!(
            run_one(&mut l, Direction::Up, Time::ZERO),
            Time::from_micros(10_100)
        );
        assert_eq!(
            run_one(&mut l, Direction::Down, Time::ZERO),
            Time::from_millis(30)
        );
        let c = l.counters();
        assert_eq!(
            (c.up.packets_in, c.up.packets_out, c.up.bytes_out),
            (1, 1, 100)
        );
    }

    #[test]
    fn radio_is_shared_by_both_directions() {
        let cfg = LinkConfig {
            radio: Some(RadioSpec::Umts(UmtsParams::default())),
            ..Default::default()
        };
        let mut l = Link::new(&cfg);
        assert_eq!(
            run_one(&mut l, Direction::Up, Time::ZERO),
            Time::from_secs(2)
        );
        // The downlink finds the radio in DCH: no wait.
        let t = Time::from_millis(2500);
        assert_eq!(run_one(&mut l, Direction::Down, t), t);
        assert_eq!(l.counters().promotions, 1);
    }

    #[test]
    fn drops_are_counted_by_cause() {
        let cfg = LinkConfig {
            up: DirectionConfig {
                loss: LossModel::Bernoulli { p: 1.0 },
                ..Default::default()
            },
            ..Default::default()
        };
        let mut l = Link::new(&cfg);
        for i in 0..10 {
            l.enqueue(Direction::Up, Time::ZERO, pkt(i, 100));
        }
        assert!(l.dequeue(Direction::Up, Time::from_secs(1)).is_none());
        assert_eq!(l.counters().up.dropped(DropCause::Loss), 10);
        assert_eq!(l.take_dropped().count(), 10);
    }
}
