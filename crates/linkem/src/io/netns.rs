//! Named network namespaces (`ip netns`), entered per thread with setns(2), and removal of
//! debris left by crashed runs.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

/// Prefix of every namespace this crate creates: `lk<pid>-<n><c|s>`.
pub const PREFIX: &str = "lk";

/// A named network namespace, deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
    file: File,
}

/// Buckets of each namespace's own TCP connection table (see [`nursery`]).
pub const TCP_EHASH_ENTRIES: u32 = 1024;

/// A namespace held only by a descriptor, whose `net.ipv4.tcp_child_ehash_entries` is
/// [`TCP_EHASH_ENTRIES`]: namespaces created from inside it get a TCP connection table of
/// their own that size (Linux 6.1 on), instead of sharing the host's (262,144 buckets on
/// a machine of 24 GiB). Listing a namespace's sockets (`sock_diag`, `ss`) walks every
/// bucket of its table, so the lab's per-load samples cost a 256th as much. `None`
/// where the kernel has no such setting: namespaces then share the host's table.
fn nursery() -> Option<i32> {
    static NURSERY: std::sync::OnceLock<Option<File>> = std::sync::OnceLock::new();
    NURSERY
        .get_or_init(|| {
            std::thread::spawn(|| -> io::Result<File> {
                // SAFETY: moves only this short-lived thread into a new namespace.
                if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                // /proc/sys/net is the opening thread's namespace's.
                std::fs::write(
                    "/proc/sys/net/ipv4/tcp_child_ehash_entries",
                    TCP_EHASH_ENTRIES.to_string(),
                )?;
                File::open("/proc/thread-self/ns/net")
            })
            .join()
            .ok()
            .and_then(Result::ok)
        })
        .as_ref()
        .map(|f| f.as_raw_fd())
}

fn run_ip(args: &[&str], stdin: Option<&str>) -> io::Result<()> {
    run_ip_in(None, args, stdin)
}

/// Runs `ip ARGS` (in namespace `from`, when given), feeding it `stdin`.
fn run_ip_in(from: Option<i32>, args: &[&str], stdin: Option<&str>) -> io::Result<()> {
    let mut cmd = Command::new("ip");
    if let Some(fd) = from {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure only calls setns(2), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || enter(fd));
        }
    }
    cmd.args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = cmd
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run `ip` (iproute2 needed): {e}")))?;
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(text.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

impl Netns {
    /// Creates namespace `name` (fails if it exists), with a TCP connection table of its
    /// own where the kernel allows ([`nursery`]).
    pub fn create(name: &str) -> io::Result<Netns> {
        run_ip_in(nursery(), &["netns", "add", name], None)?;
        match File::open(format!("/run/netns/{name}")) {
            Ok(file) => Ok(Netns {
                name: name.to_string(),
                file,
            }),
            Err(e) => {
                let _ = run_ip(&["netns", "del", name], None);
                Err(e)
            }
        }
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A descriptor of the namespace, for setns(2).
    pub fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    /// Moves the calling thread into this namespace (for good).
    pub fn enter_current_thread(&self) -> io::Result<()> {
        enter(self.fd())
    }

    /// Runs `ip -n <ns> -batch -` with one command per line.
    pub fn ip_batch(&self, commands: &str) -> io::Result<()> {
        run_ip(&["-n", &self.name, "-batch", "-"], Some(commands))
    }
}

/// setns(2) into the network namespace behind `fd` for the calling thread.
pub fn enter(fd: i32) -> io::Result<()> {
    // SAFETY: setns on a descriptor we hold; affects only the calling thread.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run_ip(&["netns", "del", &self.name], None);
    }
}

/// The pid in a name of ours (`lk<pid>-<n><c|s>`), if it is one.
pub fn owner_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, tail) = rest.split_once('-')?;
    let (num, side) = tail.split_at(tail.len().checked_sub(1)?);
    if !(side == "c" || side == "s") || num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Deletes the namespaces this process created (named with its pid), for a teardown that
/// cannot wait for the [`Netns`] values to drop (a signal). Returns their names.
pub fn remove_own() -> Vec<String> {
    let me = std::process::id() as i32;
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return removed;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if owner_pid(&name) == Some(me) && run_ip(&["netns", "del", &name], None).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// The namespaces of ours (`lk<pid>-<n><c|s>`) that exist now, each with its owner's pid
/// and whether that process still runs, sorted by name.
pub fn survey() -> Vec<(String, i32, bool)> {
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return Vec::new();
    };
    let mut out: Vec<(String, i32, bool)> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            owner_pid(&name).map(|pid| (name, pid, pid_alive(pid)))
        })
        .collect();
    out.sort();
    out
}

/// Deletes namespaces of ours whose owner process is gone. Returns their names.
pub fn remove_stale() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return removed;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = owner_pid(&name) {
            if !pid_alive(pid) && run_ip(&["netns", "del", &name], None).is_ok() {
                removed.push(name);
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_only_our_names() {
        assert_eq!(owner_pid("lk1234-0c"), Some(1234));
        assert_eq!(owner_pid("lk99-12s"), Some(99));
        assert_eq!(owner_pid("lk99-12x"), None);
        assert_eq!(owner_pid("lk-1c"), None);
        assert_eq!(owner_pid("blk1-1c"), None);
        assert_eq!(owner_pid("lk1a-1c"), None);
        assert_eq!(owner_pid("lk1-c"), None);
    }
}
