//! A Chrome DevTools Protocol client over Chromium's `--remote-debugging-pipe`: JSON
//! messages separated by NUL bytes, commands on the browser's fd 3, replies and events on
//! its fd 4. A thread (the message pump) reads the browser's messages into a channel;
//! [`Cdp::call`] waits for a command's reply and queues the events meanwhile, which
//! [`Cdp::wait_event`] and [`Cdp::take_events`] then read.

use super::{own_group, Group};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::sync::mpsc;
use std::time::Instant;

/// A DevTools protocol connection over Chromium's `--remote-debugging-pipe`.
pub(super) struct Cdp {
    to_browser: std::io::PipeWriter,
    from_browser: mpsc::Receiver<Value>,
    next_id: u64,
    events: VecDeque<Value>,
}

impl Cdp {
    /// Starts `cmd` (Chromium with `--remote-debugging-pipe`) with the pipe on fds 3
    /// and 4, in its own process group.
    pub(super) fn launch(mut cmd: std::process::Command) -> Result<(Cdp, Group), String> {
        let (browser_reads, to_browser) = std::io::pipe().map_err(|e| e.to_string())?;
        let (from_browser, browser_writes) = std::io::pipe().map_err(|e| e.to_string())?;
        let (r, w) = (browser_reads.as_raw_fd(), browser_writes.as_raw_fd());
        // SAFETY: the closure only calls fcntl(2) and dup2(2), async-signal-safe. Both
        // ends are first copied above fd 9 so that dup2 onto 3 cannot clobber the other.
        unsafe {
            cmd.pre_exec(move || {
                let r2 = libc::fcntl(r, libc::F_DUPFD_CLOEXEC, 10);
                let w2 = libc::fcntl(w, libc::F_DUPFD_CLOEXEC, 10);
                if r2 < 0 || w2 < 0 || libc::dup2(r2, 3) < 0 || libc::dup2(w2, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        own_group(&mut cmd);
        let child = Group(cmd.spawn().map_err(|e| format!("starting chromium: {e}"))?);
        // Only the browser keeps its ends, so its exit ends our reads.
        drop((browser_reads, browser_writes));
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || pump(from_browser, tx));
        Ok((
            Cdp {
                to_browser,
                from_browser: rx,
                next_id: 1,
                events: VecDeque::new(),
            },
            child,
        ))
    }

    /// Sends a command; returns its id.
    pub(super) fn send(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<u64, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).map_err(|e| e.to_string())?;
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .map_err(|e| format!("writing to chromium: {e}"))?;
        Ok(id)
    }

    /// The next message from the browser, waiting until `deadline` at most.
    fn recv(&mut self, deadline: Instant) -> Result<Value, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.from_browser.recv_timeout(left) {
            Ok(v) => Ok(v),
            Err(mpsc::RecvTimeoutError::Timeout) => Err("timed out".into()),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err("chromium exited".into()),
        }
    }

    /// Sends a command and waits for its result (events meanwhile are queued).
    pub(super) fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Value, String> {
        let id = self.send(session, method, params)?;
        loop {
            let v = self.recv(deadline).map_err(|e| format!("{method}: {e}"))?;
            if v["id"].as_u64() == Some(id) {
                if let Some(err) = v.get("error") {
                    return Err(format!("{method}: {err}"));
                }
                return Ok(v["result"].clone());
            }
            if v.get("method").is_some() {
                self.events.push_back(v);
            }
        }
    }

    /// Waits for an event of `method` in `session`.
    pub(super) fn wait_event(
        &mut self,
        session: Option<&str>,
        method: &str,
        deadline: Instant,
    ) -> Result<Value, String> {
        let matches = |v: &Value| {
            v["method"] == method && v.get("sessionId").and_then(Value::as_str) == session
        };
        if let Some(i) = self.events.iter().position(matches) {
            return Ok(self.events.remove(i).expect("present"));
        }
        loop {
            let v = self
                .recv(deadline)
                .map_err(|e| format!("waiting for {method}: {e}"))?;
            if matches(&v) {
                return Ok(v);
            }
            if v.get("method").is_some() {
                self.events.push_back(v);
            }
        }
    }

    /// Evaluates `expression` in `session` (`Runtime.evaluate`, the value returned by
    /// value) and returns the command's result.
    pub(super) fn evaluate(
        &mut self,
        session: Option<&str>,
        expression: &str,
        deadline: Instant,
    ) -> Result<Value, String> {
        self.call(
            session,
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
            deadline,
        )
    }

    /// The events received so far and not yet waited for, in order; the queue is left
    /// empty.
    pub(super) fn take_events(&mut self) -> VecDeque<Value> {
        std::mem::take(&mut self.events)
    }
}

/// The message pump: reads the browser's NUL-separated messages and sends each that
/// parses as JSON to `tx`, until the browser closes its end or nobody listens any more.
fn pump(from_browser: std::io::PipeReader, tx: mpsc::Sender<Value>) {
    let mut r = BufReader::new(from_browser);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match r.read_until(0, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        }
    }
}
