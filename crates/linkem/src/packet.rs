//! Packets and a pool of reusable packet buffers.

use crate::time::Time;

/// One IP packet as read from a TUN device (no packet-information header), or, from a
/// device with segmentation offload, one TCP super-packet standing for a train of
/// segments that leave together (see [`Offload`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The packet's bytes, from the IP header on.
    pub data: Vec<u8>,
    /// When the packet entered the link (set by [`crate::Link::enqueue`]).
    pub arrived: Time,
    /// The offload header the device gave it, written back with it.
    pub offload: Offload,
}

impl Packet {
    /// A packet holding `data`.
    pub fn new(data: Vec<u8>) -> Packet {
        Packet {
            data,
            arrived: Time::ZERO,
            offload: Offload::NONE,
        }
    }
    /// A packet of `len` zero bytes (for tests and benchmarks).
    pub fn zeroed(len: usize) -> Packet {
        Packet::new(vec![0; len])
    }
    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }
    /// True for an empty packet.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    /// The IP packets this one stands for on the wire: 1, or a super-packet's segments.
    pub fn segments(&self) -> u64 {
        match self.offload.segmented_payload(&self.data) {
            Some((_, payload, mss)) => payload.div_ceil(mss).max(1) as u64,
            None => 1,
        }
    }
    /// Bytes on the wire: the size, plus the headers each segment after the first repeats.
    pub fn wire_len(&self) -> u64 {
        let head = self
            .offload
            .segmented_payload(&self.data)
            .map_or(0, |(h, _, _)| h);
        self.data.len() as u64 + (self.segments() - 1) * head as u64
    }
}

/// The header a TUN device opened with `IFF_VNET_HDR` puts before every packet
/// (`struct virtio_net_hdr` of `<linux/virtio_net.h>`, host byte order): whether the
/// checksum is left to be completed and, for a TCP super-packet, its segment size. The
/// emulator forwards it unchanged with its packet, so the receiving kernel finishes the
/// checksum or takes the super-packet as the segments it stands for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offload {
    /// `VIRTIO_NET_HDR_F_*`: 1 needs a checksum (`csum_start`, `csum_offset`).
    pub flags: u8,
    /// `VIRTIO_NET_HDR_GSO_*`: 0 none, 1 TCP over IPv4, 4 TCP over IPv6.
    pub gso_type: u8,
    /// Bytes of headers (IP and TCP) before the payload, as the kernel counts them.
    pub hdr_len: u16,
    /// Payload bytes of each segment but the last.
    pub gso_size: u16,
    /// Where checksumming starts (the transport header).
    pub csum_start: u16,
    /// Where the checksum goes, from `csum_start`.
    pub csum_offset: u16,
}

impl Offload {
    /// No offload: a plain, checksummed packet.
    pub const NONE: Offload = Offload {
        flags: 0,
        gso_type: 0,
        hdr_len: 0,
        gso_size: 0,
        csum_start: 0,
        csum_offset: 0,
    };
    /// Size of the header on the device.
    pub const LEN: usize = 10;
    const GSO_TCPV4: u8 = 1;
    const GSO_TCPV6: u8 = 4;

    /// The header as the device reads and writes it.
    pub fn to_bytes(self) -> [u8; Offload::LEN] {
        let mut b = [0; Offload::LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        for (i, v) in [
            self.hdr_len,
            self.gso_size,
            self.csum_start,
            self.csum_offset,
        ]
        .into_iter()
        .enumerate()
        {
            b[2 + 2 * i..4 + 2 * i].copy_from_slice(&v.to_ne_bytes());
        }
        b
    }
    /// The header from the device's bytes.
    pub fn from_bytes(b: [u8; Offload::LEN]) -> Offload {
        let u = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        Offload {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        }
    }
    /// For a TCP super-packet `data`: its header bytes (IP and TCP, from the packet
    /// itself), payload bytes and segment size; `None` for anything else.
    fn segmented_payload(&self, data: &[u8]) -> Option<(usize, usize, usize)> {
        let ip = match self.gso_type & 0x7f {
            Offload::GSO_TCPV4 => usize::from(data.first()? & 0x0f) * 4,
            Offload::GSO_TCPV6 => 40,
            _ => return None,
        };
        let tcp = usize::from(data.get(ip + 12)? >> 4) * 4;
        let head = ip + tcp;
        let mss = usize::from(self.gso_size);
        (mss > 0 && data.len() > head).then(|| (head, data.len() - head, mss))
    }
}

/// A free list of packet buffers, so the hot loop does not allocate per packet.
#[derive(Debug)]
pub struct BufferPool {
    free: Vec<Vec<u8>>,
    capacity: usize,
    max_free: usize,
}

impl BufferPool {
    /// A pool of buffers of `capacity` bytes that keeps at most `max_free` idle buffers.
    pub fn new(capacity: usize, max_free: usize) -> BufferPool {
        BufferPool {
            free: Vec::new(),
            capacity,
            max_free,
        }
    }
    /// An empty buffer with room for `capacity` bytes.
    pub fn get(&mut self) -> Vec<u8> {
        match self.free.pop() {
            Some(mut b) => {
                b.clear();
                b
            }
            None => Vec::with_capacity(self.capacity),
        }
    }
    /// Gives a buffer back to the pool.
    pub fn put(&mut self, buf: Vec<u8>) {
        if self.free.len() < self.max_free && buf.capacity() >= self.capacity {
            self.free.push(buf);
        }
    }
    /// Buffer capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 TCP packet of `payload` bytes (20-byte IP and 32-byte TCP headers).
    fn tcp4(payload: usize) -> Vec<u8> {
        let mut p = vec![0u8; 52 + payload];
        p[0] = 0x45;
        p[20 + 12] = 8 << 4;
        p
    }

    #[test]
    fn a_super_packet_counts_as_its_segments() {
        let mut p = Packet::new(tcp4(10 * 1448 + 100));
        assert_eq!((p.segments(), p.wire_len()), (1, 52 + 14_580));
        p.offload = Offload {
            flags: 1,
            gso_type: 1,
            hdr_len: 52,
            gso_size: 1448,
            csum_start: 20,
            csum_offset: 16,
        };
        // 10 full segments and one of 100 bytes, each with its own 52 header bytes.
        assert_eq!(p.segments(), 11);
        assert_eq!(p.wire_len(), 11 * 52 + 14_580);
        assert_eq!(Offload::from_bytes(p.offload.to_bytes()), p.offload);
        // One segment's worth, or a non-TCP type: one packet.
        let one = Packet {
            offload: p.offload,
            ..Packet::new(tcp4(1000))
        };
        assert_eq!((one.segments(), one.wire_len()), (1, 1052));
        let udp = Packet {
            offload: Offload {
                gso_type: 5,
                ..p.offload
            },
            ..p.clone()
        };
        assert_eq!(udp.segments(), 1);
    }

    #[test]
    fn pool_reuses_buffers() {
        let mut pool = BufferPool::new(2048, 4);
        let mut b = pool.get();
        b.extend_from_slice(&[1, 2, 3]);
        let ptr = b.as_ptr();
        pool.put(b);
        let b2 = pool.get();
        assert!(b2.is_empty());
        assert_eq!(b2.as_ptr(), ptr);
        assert!(b2.capacity() >= 2048);
    }
}
