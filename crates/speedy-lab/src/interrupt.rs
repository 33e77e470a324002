//! SIGINT, SIGTERM and SIGHUP during a lab run or check: everything the run set up is torn
//! down before the process exits, so that nothing outlives it and a second start resumes
//! cleanly (issue 18).
//!
//! The handler only records the signal; a watcher thread does the work, off the signal
//! context: it deletes the network namespaces this process created (the emulated link's
//! TUN devices, routes and queues live in them) and exits with 128 + the signal's number.
//! Servers, loaders and browsers were started with `PR_SET_PDEATHSIG` (see
//! [`crate::testbed`]), so the kernel kills them as the process ends; the link forwarder is
//! a thread of this process. A results row cut in half by the exit is skipped and said when
//! the run resumes ([`crate::results::drop_unfinished_tail`]).

use std::sync::Once;
use std::time::Duration;

static INSTALL: Once = Once::new();

/// How often the watcher looks at the recorded signal.
const WATCH_EVERY: Duration = Duration::from_millis(20);

/// Installs the handlers and the watcher thread (once per process); `who` names the
/// command in the message printed on the way out.
pub fn tear_down_on_signals(who: &'static str) {
    INSTALL.call_once(|| {
        linkem::cli::record_signals();
        std::thread::Builder::new()
            .name("lab-interrupt".into())
            .spawn(move || loop {
                std::thread::sleep(WATCH_EVERY);
                let sig = linkem::cli::signal_received();
                if sig != 0 {
                    tear_down(who, sig);
                }
            })
            .expect("spawn the signal watcher");
    });
}

fn tear_down(who: &str, sig: i32) -> ! {
    let name = match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "SIGHUP",
    };
    let gone = linkem::io::netns::remove_own();
    eprintln!(
        "{who}: {name}: stopped; removed {} network namespace(s) ({}); servers, loaders and \
         browsers end with this process. Start it again with the same --out to resume.",
        gone.len(),
        gone.join(", ")
    );
    std::process::exit(128 + sig);
}
