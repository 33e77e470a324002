//! Packets and a pool of reusable packet buffers.

use crate::time::Time;

/// One IP packet as read from a TUN device (no packet-information header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The packet's bytes.
    pub data: Vec<u8>,
    /// When the packet entered the link (set by [`crate::Link::enqueue`]).
    pub arrived: Time,
}

impl Packet {
    /// A packet holding `data`.
    pub fn new(data: Vec<u8>) -> Packet {
        Packet {
            data,
            arrived: Time::ZERO,
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
