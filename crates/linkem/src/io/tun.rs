//! TUN devices (layer 3, no packet-information header), non-blocking, each packet
//! preceded by its offload header ([`Offload`], `IFF_VNET_HDR`). With offloads on
//! ([`Tun::set_offload`]) the kernel hands over TCP super-packets of up to 64 KiB with
//! their checksums left to finish, and takes them back the same way: one read and one
//! write for a train of segments.

use crate::packet::Offload;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const TUN_F_CSUM: libc::c_ulong = 0x01;
const TUN_F_TSO4: libc::c_ulong = 0x02;
const TUN_F_TSO6: libc::c_ulong = 0x04;
/// The largest packet a device with offloads on hands over: a 64 KiB super-packet.
pub const MAX_OFFLOADED: usize = 65_536;

/// An open TUN device. The device lives as long as this handle.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    name: String,
}

impl Tun {
    /// Creates TUN device `name` in the calling thread's network namespace.
    pub fn create(name: &str) -> io::Result<Tun> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad interface name '{name}'"),
            ));
        }
        let path = CString::new("/dev/net/tun").expect("no NUL");
        // SAFETY: plain open(2) of a NUL-terminated path.
        let raw = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ifreq is plain data; all-zero is a valid value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
            *dst = src as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
        // SAFETY: TUNSETIFF reads and writes one ifreq, which outlives the call.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tun {
            fd,
            name: name.to_string(),
        })
    }

    /// The device name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Turns checksum and TCP segmentation offload (IPv4 and IPv6) on or off. Off, every
    /// packet read is one checksummed IP packet of at most the MTU; on, reads need room
    /// for [`MAX_OFFLOADED`] bytes.
    pub fn set_offload(&self, on: bool) -> io::Result<()> {
        let flags = if on {
            TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6
        } else {
            0
        };
        // SAFETY: TUNSETOFFLOAD takes its flags by value.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), TUNSETOFFLOAD as _, flags) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Reads one packet into `buf`'s spare capacity (replacing its contents) and its
    /// offload header. Returns the packet size; `WouldBlock` when none is waiting.
    pub fn read_into(&self, buf: &mut Vec<u8>) -> io::Result<(usize, Offload)> {
        buf.clear();
        let mut head = [0u8; Offload::LEN];
        let iov = [
            libc::iovec {
                iov_base: head.as_mut_ptr().cast(),
                iov_len: head.len(),
            },
            libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.capacity(),
            },
        ];
        // SAFETY: the kernel writes at most each iovec's length into memory that lives
        // through the call.
        let n = unsafe { libc::readv(self.fd.as_raw_fd(), iov.as_ptr(), 2) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let len = (n as usize).saturating_sub(Offload::LEN);
        // SAFETY: the first `len <= capacity` bytes were initialised by readv(2).
        unsafe { buf.set_len(len) };
        Ok((len, Offload::from_bytes(head)))
    }

    /// Reads and drops the packets waiting at the device, at most `max`, and returns how
    /// many there were: what the kernel queued while no link was reading it.
    pub fn discard_queued(&self, max: u64) -> io::Result<u64> {
        let mut buf = Vec::with_capacity(1 << 16);
        let mut n = 0;
        while n < max {
            match self.read_into(&mut buf) {
                Ok(_) => n += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }

    /// Writes one packet with its offload header.
    pub fn write(&self, packet: &[u8], offload: Offload) -> io::Result<usize> {
        let head = offload.to_bytes();
        let iov = [
            libc::iovec {
                iov_base: head.as_ptr() as *mut _,
                iov_len: head.len(),
            },
            libc::iovec {
                iov_base: packet.as_ptr() as *mut _,
                iov_len: packet.len(),
            },
        ];
        // SAFETY: writev(2) only reads the two buffers, which outlive the call.
        let n = unsafe { libc::writev(self.fd.as_raw_fd(), iov.as_ptr(), 2) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok((n as usize).saturating_sub(Offload::LEN))
        }
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
