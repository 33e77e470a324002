//! IO: TUN devices, network namespaces, the forwarding loop and the topology API.
//!
//! Everything here needs root (CAP_NET_ADMIN), `/dev/net/tun` and iproute2's `ip`.

pub mod forward;
pub mod netns;
pub mod topology;
pub mod tun;
