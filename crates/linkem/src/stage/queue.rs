//! Queue disciplines for a bottleneck: infinite, drop-tail, drop-head (by packets or
//! bytes) and CoDel (RFC 8289).

use super::{DropCause, Dropped, Drops};
use crate::packet::Packet;
use crate::time::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// A queue size limit.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Limit {
    /// At most this many packets.
    Packets(usize),
    /// At most this many bytes.
    Bytes(usize),
}

/// CoDel parameters (RFC 8289 defaults: target 5 ms, interval 100 ms).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CoDelParams {
    /// Acceptable standing queue delay.
    pub target: Duration,
    /// Sliding window over which the minimum sojourn time is judged.
    pub interval: Duration,
    /// Hard limit on queue length; arrivals beyond it are tail-dropped.
    pub limit: Limit,
    /// A queue holding at most this many bytes is never considered standing.
    pub mtu: usize,
}

impl Default for CoDelParams {
    fn default() -> Self {
        CoDelParams {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            limit: Limit::Packets(1000),
            mtu: 1500,
        }
    }
}

/// Which discipline a bottleneck queue uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum QueueSpec {
    /// Never drops.
    #[default]
    Infinite,
    /// Drops the arriving packet when full.
    DropTail(Limit),
    /// Drops the oldest packets to make room for the arriving one.
    DropHead(Limit),
    /// Controlled Delay active queue management.
    CoDel(CoDelParams),
}

impl QueueSpec {
    /// Parses `infinite`, `droptail:packets=N`, `droptail:bytes=N`, `drophead:packets=N`,
    /// `drophead:bytes=N`, or `codel[:target=MS,interval=MS,packets=N|bytes=N]`.
    pub fn parse(s: &str) -> Result<QueueSpec, String> {
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        let mut limit = None;
        let mut codel = CoDelParams::default();
        for kv in rest.split(',').filter(|x| !x.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("queue option '{kv}' is not key=value"))?;
            let num = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| format!("queue option {k}: '{v}' is not a whole number"))
            };
            match k {
                "packets" => limit = Some(Limit::Packets(num(v)? as usize)),
                "bytes" => limit = Some(Limit::Bytes(num(v)? as usize)),
                "target" if kind == "codel" => codel.target = Duration::from_millis(num(v)?),
                "interval" if kind == "codel" => codel.interval = Duration::from_millis(num(v)?),
                _ => return Err(format!("unknown queue option '{k}' for '{kind}'")),
            }
        }
        match kind {
            "infinite" if limit.is_none() => Ok(QueueSpec::Infinite),
            "droptail" | "drophead" => {
                let l = limit.ok_or_else(|| {
                    format!("queue '{kind}' needs a size: {kind}:packets=N or {kind}:bytes=N")
                })?;
                Ok(if kind == "droptail" {
                    QueueSpec::DropTail(l)
                } else {
                    QueueSpec::DropHead(l)
                })
            }
            "codel" => {
                if let Some(l) = limit {
                    codel.limit = l;
                }
                Ok(QueueSpec::CoDel(codel))
            }
            _ => Err(format!(
                "unknown queue '{s}': use infinite, droptail:packets=N, droptail:bytes=N, \
                 drophead:packets=N, drophead:bytes=N or codel[:target=MS,interval=MS,packets=N]"
            )),
        }
    }
}

#[derive(Debug, Default)]
struct CoDelState {
    first_above_time: Option<Time>,
    drop_next: Time,
    count: u32,
    last_count: u32,
    dropping: bool,
}

/// A FIFO of packets with their enqueue times, under a [`QueueSpec`].
pub struct Queue {
    spec: QueueSpec,
    q: VecDeque<(Time, Packet)>,
    bytes: usize,
    codel: CoDelState,
}

impl Queue {
    /// An empty queue.
    pub fn new(spec: QueueSpec) -> Queue {
        Queue {
            spec,
            q: VecDeque::new(),
            bytes: 0,
            codel: CoDelState::default(),
        }
    }

    /// Packets waiting.
    pub fn len(&self) -> usize {
        self.q.len()
    }
    /// True if no packet waits.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    /// Bytes waiting.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    /// Enqueue time of the oldest packet.
    pub fn front_time(&self) -> Option<Time> {
        self.q.front().map(|(t, _)| *t)
    }

    fn fits(limit: Limit, len: usize, bytes: usize, extra: usize) -> bool {
        match limit {
            Limit::Packets(n) => len < n,
            Limit::Bytes(b) => bytes + extra <= b,
        }
    }

    /// Adds `packet`, arriving at `at`, dropping whatever the discipline says.
    pub fn push(&mut self, at: Time, packet: Packet, drops: &mut Drops) {
        let size = packet.len();
        match self.spec {
            QueueSpec::Infinite => {}
            QueueSpec::DropTail(limit) | QueueSpec::CoDel(CoDelParams { limit, .. }) => {
                if !Self::fits(limit, self.q.len(), self.bytes, size) {
                    drops.push(Dropped {
                        at,
                        cause: DropCause::QueueTail,
                        packet,
                    });
                    return;
                }
            }
            QueueSpec::DropHead(limit) => {
                while !Self::fits(limit, self.q.len(), self.bytes, size) {
                    match self.q.pop_front() {
                        Some((_, old)) => {
                            self.bytes -= old.len();
                            drops.push(Dropped {
                                at,
                                cause: DropCause::QueueHead,
                                packet: old,
                            });
                        }
                        None => {
                            // The packet alone is larger than the limit.
                            drops.push(Dropped {
                                at,
                                cause: DropCause::QueueHead,
                                packet,
                            });
                            return;
                        }
                    }
                }
            }
        }
        self.bytes += size;
        self.q.push_back((at, packet));
    }

    fn take(&mut self) -> Option<(Time, Packet)> {
        let x = self.q.pop_front()?;
        self.bytes -= x.1.len();
        Some(x)
    }

    /// Removes the next packet to send at `now`, with its enqueue time. CoDel may drop
    /// packets on the way (into `drops`) and may return `None` after dropping them all.
    pub fn pop(&mut self, now: Time, drops: &mut Drops) -> Option<(Time, Packet)> {
        match self.spec {
            QueueSpec::CoDel(p) => self.codel_pop(now, p, drops),
            _ => self.take(),
        }
    }

    /// CoDel's dequeue-side helper: pops one packet and says whether the sojourn time
    /// has stayed above target for at least an interval.
    fn codel_take(&mut self, now: Time, p: CoDelParams) -> (Option<(Time, Packet)>, bool) {
        let Some((enq, pkt)) = self.take() else {
            self.codel.first_above_time = None;
            return (None, false);
        };
        let sojourn = now - enq;
        let mut ok_to_drop = false;
        if sojourn < p.target || self.bytes <= p.mtu {
            self.codel.first_above_time = None;
        } else {
            match self.codel.first_above_time {
                None => self.codel.first_above_time = Some(now + p.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        (Some((enq, pkt)), ok_to_drop)
    }

    fn control_law(t: Time, interval: Duration, count: u32) -> Time {
        t + interval.div_f64((count.max(1) as f64).sqrt())
    }

    fn codel_pop(
        &mut self,
        now: Time,
        p: CoDelParams,
        drops: &mut Drops,
    ) -> Option<(Time, Packet)> {
        let (mut item, mut ok) = self.codel_take(now, p);
        let Some(_) = item else {
            self.codel.dropping = false;
            return None;
        };
        let drop = |pkt: Packet, drops: &mut Drops| {
            drops.push(Dropped {
                at: now,
                cause: DropCause::Codel,
                packet: pkt,
            })
        };
        if self.codel.dropping {
            if !ok {
                self.codel.dropping = false;
            }
            while self.codel.dropping && now >= self.codel.drop_next {
                if let Some((_, pkt)) = item.take() {
                    drop(pkt, drops);
                }
                self.codel.count += 1;
                (item, ok) = self.codel_take(now, p);
                if !ok {
                    self.codel.dropping = false;
                } else {
                    self.codel.drop_next =
                        Self::control_law(self.codel.drop_next, p.interval, self.codel.count);
                }
            }
        } else if ok {
            if let Some((_, pkt)) = item.take() {
                drop(pkt, drops);
            }
            (item, _) = self.codel_take(now, p);
            self.codel.dropping = true;
            let delta = self.codel.count.saturating_sub(self.codel.last_count);
            self.codel.count = if delta > 1 && now - self.codel.drop_next < p.interval * 16 {
                delta
            } else {
                1
            };
            self.codel.drop_next = Self::control_law(now, p.interval, self.codel.count);
            self.codel.last_count = self.codel.count;
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::testutil::{id, pkt};

    fn fill(q: &mut Queue, n: u32, len: usize, drops: &mut Drops) {
        for i in 0..n {
            q.push(Time::from_millis(i as u64), pkt(i, len), drops);
        }
    }

    #[test]
    fn droptail_by_packets_drops_arrivals() {
        let mut q = Queue::new(QueueSpec::DropTail(Limit::Packets(3)));
        let mut drops = Vec::new();
        fill(&mut q, 5, 100, &mut drops);
        assert_eq!(q.len(), 3);
        assert_eq!(drops.len(), 2);
        assert_eq!(id(&drops[0].packet), 3);
        assert_eq!(drops[0].cause, DropCause::QueueTail);
        assert_eq!(id(&q.pop(Time::ZERO, &mut drops).unwrap().1), 0);
    }

    #[test]
    fn drophead_by_bytes_drops_oldest() {
        let mut q = Queue::new(QueueSpec::DropHead(Limit::Bytes(250)));
        let mut drops = Vec::new();
        fill(&mut q, 4, 100, &mut drops);
        assert_eq!(q.len(), 2);
        assert_eq!(q.bytes(), 200);
        let dropped: Vec<_> = drops.iter().map(|d| id(&d.packet)).collect();
        assert_eq!(dropped, vec![0, 1]);
        assert!(drops.iter().all(|d| d.cause == DropCause::QueueHead));
        q.push(Time::ZERO, pkt(9, 300), &mut drops);
        assert_eq!(
            id(&drops.last().unwrap().packet),
            9,
            "oversized packet dropped"
        );
    }

    #[test]
    fn infinite_keeps_everything() {
        let mut q = Queue::new(QueueSpec::Infinite);
        let mut drops = Vec::new();
        fill(&mut q, 10_000, 1500, &mut drops);
        assert!(drops.is_empty());
        assert_eq!(q.bytes(), 15_000_000);
    }

    #[test]
    fn codel_drops_a_standing_queue_and_not_a_short_one() {
        // Packets arrive at 2 per ms and leave at 1 per ms: the queue grows without end.
        let mut q = Queue::new(QueueSpec::CoDel(CoDelParams {
            limit: Limit::Packets(100_000),
            ..Default::default()
        }));
        let mut drops = Vec::new();
        let mut next = 0u32;
        let mut delivered = 0;
        for ms in 0..2000u64 {
            for _ in 0..2 {
                q.push(Time::from_millis(ms), pkt(next, 1500), &mut drops);
                next += 1;
            }
            if q.pop(Time::from_millis(ms), &mut drops).is_some() {
                delivered += 1;
            }
        }
        let codel_drops = drops.iter().filter(|d| d.cause == DropCause::Codel).count();
        assert!(codel_drops > 100, "{codel_drops}");
        assert!(delivered > 1900, "{delivered}");

        // A queue that drains within target never loses a packet.
        let mut q = Queue::new(QueueSpec::CoDel(CoDelParams::default()));
        let mut drops = Vec::new();
        for ms in 0..2000u64 {
            q.push(Time::from_millis(ms), pkt(ms as u32, 1500), &mut drops);
            q.push(Time::from_millis(ms), pkt(ms as u32, 1500), &mut drops);
            q.pop(
                Time::from_millis(ms) + Duration::from_micros(100),
                &mut drops,
            );
            q.pop(
                Time::from_millis(ms) + Duration::from_micros(200),
                &mut drops,
            );
        }
        assert!(drops.is_empty());
    }

    #[test]
    fn parses_specs_and_rejects_bad_ones() {
        assert_eq!(QueueSpec::parse("infinite"), Ok(QueueSpec::Infinite));
        assert_eq!(
            QueueSpec::parse("droptail:packets=100"),
            Ok(QueueSpec::DropTail(Limit::Packets(100)))
        );
        assert_eq!(
            QueueSpec::parse("drophead:bytes=150000"),
            Ok(QueueSpec::DropHead(Limit::Bytes(150_000)))
        );
        let QueueSpec::CoDel(p) = QueueSpec::parse("codel:target=10,interval=200").unwrap() else {
            panic!()
        };
        assert_eq!(p.target, Duration::from_millis(10));
        assert!(QueueSpec::parse("droptail")
            .unwrap_err()
            .contains("needs a size"));
        assert!(QueueSpec::parse("red").is_err());
        assert!(QueueSpec::parse("droptail:packets=x").is_err());
    }
}
