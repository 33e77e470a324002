//! The few usrsctp functions and structures the second stack uses, declared by hand and
//! checked against Debian's `/usr/include/usrsctp.h` (libusrsctp 0.9.5): sizes and
//! offsets measured with `offsetof` on x86-64 Linux (`sockaddr_conn` 16 bytes,
//! `sctp_sndinfo` 16, `sctp_rcvinfo` 28, `sctp_initmsg` 8, `sctp_rtoinfo` 16, `sctp_paddrparams` 152,
//! `struct sctpstat` 664).

use libc::{c_int, c_uint, c_void, size_t, sockaddr, socklen_t, ssize_t};

/// usrsctp's own address family: an address is an opaque pointer the application
/// chooses, and packets go out through the callback given to [`usrsctp_init_nothreads`].
pub const AF_CONN: c_int = 123;
/// `IPPROTO_SCTP`.
pub const IPPROTO_SCTP: c_int = 132;
/// Socket options (`usrsctp.h`).
pub const SCTP_RTOINFO: c_int = 0x01;
pub const SCTP_INITMSG: c_int = 0x03;
pub const SCTP_NODELAY: c_int = 0x04;
pub const SCTP_RECVRCVINFO: c_int = 0x1f;
pub const SCTP_PEER_ADDR_PARAMS: c_int = 0x0a;
/// `spp_flags`: path MTU discovery off, `spp_pathmtu` taken as the path MTU.
pub const SPP_PMTUD_DISABLE: u32 = 0x10;
/// `usrsctp_sendv`'s and `usrsctp_recvv`'s info types.
pub const SCTP_SENDV_SNDINFO: c_uint = 1;
pub const SCTP_RECVV_RCVINFO: c_uint = 1;
/// `usrsctp_get_events`' bits.
pub const SCTP_EVENT_ERROR: c_int = 0x0004;
/// `msg_flags`: the end of a message; a notification rather than data.
pub const MSG_EOR: c_int = libc::MSG_EOR;
pub const MSG_NOTIFICATION: c_int = 0x2000;

/// `struct socket`: opaque.
#[repr(C)]
pub struct Socket {
    _private: [u8; 0],
}

/// `struct sockaddr_conn` (Linux layout: no length byte).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SockaddrConn {
    pub sconn_family: u16,
    /// The SCTP port, network byte order.
    pub sconn_port: u16,
    pub sconn_addr: *mut c_void,
}

/// `struct sctp_sndinfo`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct SndInfo {
    pub snd_sid: u16,
    pub snd_flags: u16,
    /// Network byte order, as it goes on the wire.
    pub snd_ppid: u32,
    pub snd_context: u32,
    pub snd_assoc_id: u32,
}

/// `struct sctp_rcvinfo`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct RcvInfo {
    pub rcv_sid: u16,
    pub rcv_ssn: u16,
    pub rcv_flags: u16,
    pub rcv_ppid: u32,
    pub rcv_tsn: u32,
    pub rcv_cumtsn: u32,
    pub rcv_context: u32,
    pub rcv_assoc_id: u32,
}

/// `struct sctp_initmsg`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct InitMsg {
    pub sinit_num_ostreams: u16,
    pub sinit_max_instreams: u16,
    pub sinit_max_attempts: u16,
    pub sinit_max_init_timeo: u16,
}

/// `struct sctp_paddrparams` (152 bytes: `spp_address` is a 128-byte
/// `sockaddr_storage`; all zero: the socket's defaults for every association).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct PaddrParams {
    pub spp_address: [u64; 16],
    pub spp_assoc_id: u32,
    pub spp_hbinterval: u32,
    pub spp_pathmtu: u32,
    pub spp_flags: u32,
    pub spp_ipv6_flowlabel: u32,
    pub spp_pathmaxrxt: u16,
    pub spp_dscp: u8,
}

/// `struct sctp_rtoinfo` (0 leaves a value as it is).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct RtoInfo {
    pub srto_assoc_id: u32,
    pub srto_initial: u32,
    pub srto_max: u32,
    pub srto_min: u32,
}

/// `struct sctpstat` as 32-bit words (664 bytes in 0.9.5; room to spare): the indexes
/// below are `offsetof(struct sctpstat, field) / 4`.
pub type Stat = [u32; 256];
pub const STAT_ACTIVEESTAB: usize = 3;
pub const STAT_PASSIVEESTAB: usize = 6;
pub const STAT_RECVSACKS: usize = 24;
pub const STAT_RECVDATA: usize = 25;
pub const STAT_SENDFASTRETRANS: usize = 44;
pub const STAT_TIMODATA: usize = 68;
pub const STAT_TIMOSACK: usize = 71;

/// `conn_output`: a packet for the AF_CONN address `addr`.
pub type ConnOutput = unsafe extern "C" fn(
    addr: *mut c_void,
    buffer: *mut c_void,
    length: size_t,
    tos: u8,
    set_df: u8,
) -> c_int;
/// A socket's upcall: it became readable or writable, or failed.
pub type Upcall = unsafe extern "C" fn(sock: *mut Socket, arg: *mut c_void, flags: c_int);

/// Declares usrsctp's functions once: a table of pointers looked up in the shared
/// library at run time ([`load`]), and a function of the same name and signature for
/// each, which calls through the table.
macro_rules! usrsctp_fns {
    ($( fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $(-> $ret:ty)? ; )*) => {
        /// usrsctp's functions, as found in the loaded library.
        struct Lib {
            $( $name: unsafe extern "C" fn($($ty),*) $(-> $ret)?, )*
        }

        impl Lib {
            /// Looks every function up in `handle`, or names the first that is missing.
            ///
            /// # Safety
            /// `handle` is a live `dlopen` handle of a usrsctp library whose functions
            /// have the signatures declared here (usrsctp.h of 0.9.5).
            unsafe fn find(handle: *mut c_void) -> Result<Lib, String> {
                Ok(Lib {
                    $( $name: {
                        let sym = concat!(stringify!($name), "\0");
                        // SAFETY: a NUL-terminated name and a live handle.
                        let p = unsafe { libc::dlsym(handle, sym.as_ptr().cast()) };
                        if p.is_null() {
                            return Err(format!("libusrsctp has no {}", stringify!($name)));
                        }
                        // SAFETY: the symbol is usrsctp's function of this signature.
                        unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($ty),*) $(-> $ret)?>(p)
                        }
                    }, )*
                })
            }
        }

        $(
            #[doc = concat!("usrsctp's `", stringify!($name), "`, through the loaded library ([`load`] first).")]
            ///
            /// # Safety
            /// As the C function's: usrsctp.h.
            #[allow(clippy::too_many_arguments)] // the C signature's
            pub unsafe fn $name($($arg: $ty),*) $(-> $ret)? {
                // SAFETY: the caller keeps the C function's contract.
                unsafe { (lib().$name)($($arg),*) }
            }
        )*
    };
}

usrsctp_fns! {
    fn usrsctp_init_nothreads(
        port: u16,
        conn_output: Option<ConnOutput>,
        debug_printf: Option<unsafe extern "C" fn(*const libc::c_char, ...)>,
    );
    fn usrsctp_handle_timers(elapsed_milliseconds: u32);
    fn usrsctp_socket(
        domain: c_int,
        kind: c_int,
        protocol: c_int,
        receive_cb: *const c_void,
        send_cb: *const c_void,
        sb_threshold: u32,
        ulp_info: *mut c_void,
    ) -> *mut Socket;
    fn usrsctp_setsockopt(
        so: *mut Socket,
        level: c_int,
        option_name: c_int,
        option_value: *const c_void,
        option_len: socklen_t,
    ) -> c_int;
    fn usrsctp_sendv(
        so: *mut Socket,
        data: *const c_void,
        len: size_t,
        to: *mut sockaddr,
        addrcnt: c_int,
        info: *mut c_void,
        infolen: socklen_t,
        infotype: c_uint,
        flags: c_int,
    ) -> ssize_t;
    fn usrsctp_recvv(
        so: *mut Socket,
        dbuf: *mut c_void,
        len: size_t,
        from: *mut sockaddr,
        fromlen: *mut socklen_t,
        info: *mut c_void,
        infolen: *mut socklen_t,
        infotype: *mut c_uint,
        msg_flags: *mut c_int,
    ) -> ssize_t;
    fn usrsctp_bind(so: *mut Socket, name: *mut sockaddr, namelen: socklen_t) -> c_int;
    fn usrsctp_listen(so: *mut Socket, backlog: c_int) -> c_int;
    fn usrsctp_accept(
        so: *mut Socket,
        aname: *mut sockaddr,
        anamelen: *mut socklen_t,
    ) -> *mut Socket;
    fn usrsctp_connect(so: *mut Socket, name: *mut sockaddr, namelen: socklen_t) -> c_int;
    fn usrsctp_close(so: *mut Socket);
    fn usrsctp_shutdown(so: *mut Socket, how: c_int) -> c_int;
    fn usrsctp_conninput(addr: *mut c_void, buffer: *const c_void, length: size_t, ecn: u8);
    fn usrsctp_set_non_blocking(so: *mut Socket, onoff: c_int) -> c_int;
    fn usrsctp_register_address(addr: *mut c_void);
    fn usrsctp_deregister_address(addr: *mut c_void);
    fn usrsctp_set_upcall(so: *mut Socket, upcall: Option<Upcall>, arg: *mut c_void) -> c_int;
    fn usrsctp_get_events(so: *mut Socket) -> c_int;
    fn usrsctp_get_stat(stat: *mut Stat);
    fn usrsctp_sysctl_set_sctp_no_csum_on_loopback(value: u32) -> c_int;
    fn usrsctp_sysctl_set_sctp_ecn_enable(value: u32) -> c_int;
    fn usrsctp_sysctl_set_sctp_nr_incoming_streams_default(value: u32) -> c_int;
    fn usrsctp_sysctl_set_sctp_nr_outgoing_streams_default(value: u32) -> c_int;
}

/// The library file names tried, in turn: Debian's runtime package (`libusrsctp2`), then
/// the development link.
const LIBRARY_NAMES: [&str; 2] = ["libusrsctp.so.2\0", "libusrsctp.so\0"];

static LIB: std::sync::OnceLock<Result<Lib, String>> = std::sync::OnceLock::new();

/// Loads usrsctp's shared library once per process (it is loaded at run time, not linked,
/// so speedy builds and runs where it is not installed; only the usrsctp stack needs it).
/// The error says what is missing and how to install it.
pub fn load() -> Result<(), String> {
    let lib = LIB.get_or_init(|| {
        for name in LIBRARY_NAMES {
            // SAFETY: a NUL-terminated file name.
            let h =
                unsafe { libc::dlopen(name.as_ptr().cast(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
            if !h.is_null() {
                // SAFETY: a live handle of a usrsctp library (never closed).
                return unsafe { Lib::find(h) };
            }
        }
        Err(
            "the usrsctp SCTP stack needs libusrsctp.so.2, which is not installed \
             (Debian: apt-get install libusrsctp2)"
                .to_string(),
        )
    });
    lib.as_ref().map(|_| ()).map_err(Clone::clone)
}

/// The loaded library; [`load`] has succeeded before any call.
fn lib() -> &'static Lib {
    match LIB.get() {
        Some(Ok(lib)) => lib,
        _ => panic!("usrsctp called before ffi::load succeeded"),
    }
}
