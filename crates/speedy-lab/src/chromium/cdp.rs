//! A Chrome DevTools Protocol client over Chromium's `--remote-debugging-pipe`: JSON
//! messages separated by NUL bytes, commands on the browser's fd 3, replies and events on
//! its fd 4. A thread (the message pump) reads the browser's messages into a channel;
//! [`Cdp::call`] waits for a command's reply and queues the events meanwhile, which
//! [`Cdp::wait_event`] and [`Cdp::take_events`] then read.
//!
//! Every message is read into a typed envelope ([`Message`]); a command's result and an
//! event's parameters are then read into the type the caller names (serde), never by key.

use super::{own_group, Group};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One message from the browser: a command's reply (`id`, `result` or `error`) or an
/// event (`method`, `params`), in a session (`sessionId`) or the browser's own.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Message {
    /// The command's id, for a reply.
    #[serde(default)]
    id: Option<u64>,
    /// The event's name, for an event.
    #[serde(default)]
    method: Option<String>,
    /// The target session, when not the browser's.
    #[serde(default)]
    session_id: Option<String>,
    /// The event's parameters.
    #[serde(default)]
    params: Value,
    /// The command's result.
    #[serde(default)]
    result: Value,
    /// The command's failure.
    #[serde(default)]
    error: Option<CdpError>,
}

/// A command's failure, as the browser reports it.
#[derive(Debug, Deserialize)]
struct CdpError {
    /// The code (JSON-RPC's).
    code: i64,
    /// What went wrong.
    message: String,
}

/// An event the browser sent: its name, its session and its parameters (read into a
/// type with [`Event::params`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Event {
    /// `Domain.event`, e.g. `Network.requestWillBeSent`.
    pub method: String,
    /// The session it came from (`None`: the browser's own).
    pub session: Option<String>,
    /// Its parameters, as sent.
    pub params: Value,
}

impl Event {
    /// An event from one message of the protocol (a JSON object with `method`,
    /// `params` and maybe `sessionId`); `None` for a reply or a message that is not one.
    #[cfg(test)]
    pub(crate) fn parse(text: &str) -> Option<Event> {
        let m: Message = serde_json::from_str(text).ok()?;
        Event::of(m)
    }

    /// The event a message is, if it is one.
    fn of(m: Message) -> Option<Event> {
        Some(Event {
            method: m.method?,
            session: m.session_id,
            params: m.params,
        })
    }

    /// Its parameters read into `T`.
    pub(crate) fn params<T: DeserializeOwned>(&self) -> Result<T, String> {
        T::deserialize(&self.params).map_err(|e| format!("{}: {e}", self.method))
    }
}

/// What [`Cdp`] calls while it waits, every so often (the lab's samplers).
type Tick<'a> = (Duration, Box<dyn FnMut() + 'a>);

/// A DevTools protocol connection over Chromium's `--remote-debugging-pipe`.
pub(crate) struct Cdp<'a> {
    to_browser: std::io::PipeWriter,
    from_browser: mpsc::Receiver<Message>,
    next_id: u64,
    events: VecDeque<Event>,
    /// Called every so often while waiting for the browser, and when it is due.
    tick: Option<Tick<'a>>,
    next_tick: Instant,
    /// Targets the page starts (out-of-process frames, workers) are attached to, their
    /// network events enabled, and then let run ([`Cdp::auto_attach`]).
    auto_attach: bool,
    /// The sessions of the targets attached so.
    children: Vec<String>,
}

/// `Target.attachedToTarget`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AttachedToTarget {
    /// The new target's session.
    session_id: String,
}

impl<'a> Cdp<'a> {
    /// Starts `cmd` (Chromium with `--remote-debugging-pipe`) with the pipe on fds 3
    /// and 4, in its own process group.
    pub(crate) fn launch(mut cmd: std::process::Command) -> Result<(Cdp<'a>, Group), String> {
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
                tick: None,
                next_tick: Instant::now(),
                auto_attach: false,
                children: Vec::new(),
            },
            child,
        ))
    }

    /// Calls `f` every `every` while this connection waits for the browser.
    pub(crate) fn set_tick(&mut self, every: Duration, f: impl FnMut() + 'a) {
        self.tick = Some((every, Box::new(f)));
        self.next_tick = Instant::now() + every;
    }

    /// Attaches to every target `session`'s page starts (a cross-site frame runs in a
    /// process, and a target, of its own), and to theirs in turn: each is held at its
    /// start until its `Network` events are enabled, so that the page's requests are all
    /// seen ([`Cdp::sessions`]).
    pub(crate) fn auto_attach(&mut self, session: &str, deadline: Instant) -> Result<(), String> {
        self.auto_attach = true;
        self.call::<Value>(
            Some(session),
            "Target.setAutoAttach",
            auto_attach_params(),
            deadline,
        )
        .map(|_| ())
    }

    /// `page` and the sessions of the targets attached to under it.
    pub(crate) fn sessions(&self, page: &str) -> Vec<String> {
        std::iter::once(page.to_string())
            .chain(self.children.iter().cloned())
            .collect()
    }

    /// A new target the page started: its network events on, its own children
    /// attached to, and then let run. Replies are not waited for (commands to one
    /// session run in order).
    fn on_attached(&mut self, m: &Message) {
        let Ok(a) = AttachedToTarget::deserialize(&m.params) else {
            return;
        };
        let s = Some(a.session_id.as_str());
        let _ = self.send(s, "Network.enable", json!({}));
        let _ = self.send(s, "Target.setAutoAttach", auto_attach_params());
        let _ = self.send(s, "Runtime.runIfWaitingForDebugger", json!({}));
        self.children.push(a.session_id);
    }

    /// Sends a command; returns its id.
    pub(crate) fn send(
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

    /// The next message from the browser, waiting until `deadline` at most (and calling
    /// the tick when it is due meanwhile).
    fn recv(&mut self, deadline: Instant) -> Result<Message, String> {
        loop {
            let now = Instant::now();
            if let Some((every, f)) = &mut self.tick {
                if now >= self.next_tick {
                    f();
                    self.next_tick = Instant::now() + *every;
                }
            }
            let until = match self.tick {
                Some(_) => deadline.min(self.next_tick),
                None => deadline,
            };
            match self
                .from_browser
                .recv_timeout(until.saturating_duration_since(Instant::now()))
            {
                Ok(m) => {
                    if self.auto_attach && m.method.as_deref() == Some("Target.attachedToTarget") {
                        self.on_attached(&m);
                    }
                    return Ok(m);
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => continue,
                Err(mpsc::RecvTimeoutError::Timeout) => return Err("timed out".into()),
                Err(mpsc::RecvTimeoutError::Disconnected) => return Err("chromium exited".into()),
            }
        }
    }

    /// Sends a command and waits for its result, read into `T` (events meanwhile are
    /// queued).
    pub(crate) fn call<T: DeserializeOwned>(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<T, String> {
        let id = self.send(session, method, params)?;
        loop {
            let m = self.recv(deadline).map_err(|e| format!("{method}: {e}"))?;
            if m.id == Some(id) {
                if let Some(err) = m.error {
                    return Err(format!("{method}: {} ({})", err.message, err.code));
                }
                return T::deserialize(&m.result).map_err(|e| format!("{method}: {e}"));
            }
            if let Some(ev) = Event::of(m) {
                self.events.push_back(ev);
            }
        }
    }

    /// Waits for an event of `method` in `session`.
    pub(crate) fn wait_event(
        &mut self,
        session: Option<&str>,
        method: &str,
        deadline: Instant,
    ) -> Result<Event, String> {
        let matches = |e: &Event| e.method == method && e.session.as_deref() == session;
        if let Some(i) = self.events.iter().position(matches) {
            return Ok(self.events.remove(i).expect("present"));
        }
        loop {
            let m = self
                .recv(deadline)
                .map_err(|e| format!("waiting for {method}: {e}"))?;
            if let Some(ev) = Event::of(m) {
                if matches(&ev) {
                    return Ok(ev);
                }
                self.events.push_back(ev);
            }
        }
    }

    /// Evaluates `expression` in `session` (`Runtime.evaluate`, the value returned by
    /// value; a promise awaited when `await_promise`) and reads the value into `T`.
    pub(crate) fn evaluate<T: DeserializeOwned>(
        &mut self,
        session: Option<&str>,
        expression: &str,
        await_promise: bool,
        deadline: Instant,
    ) -> Result<T, String> {
        let r: Evaluated = self.call(
            session,
            "Runtime.evaluate",
            json!({
                "expression": expression,
                "returnByValue": true,
                "awaitPromise": await_promise,
            }),
            deadline,
        )?;
        if let Some(x) = r.exception_details {
            return Err(format!("evaluating the page's timings: {}", x.text));
        }
        T::deserialize(&r.result.value).map_err(|e| format!("the page's timings: {e}"))
    }

    /// Receives messages until `until`, keeping their events queued for
    /// [`Cdp::queued`] and [`Cdp::take_events`]; `false` when Chromium has exited.
    pub(crate) fn pump(&mut self, until: Instant) -> bool {
        loop {
            match self.recv(until) {
                Ok(m) => {
                    if let Some(ev) = Event::of(m) {
                        self.events.push_back(ev);
                    }
                }
                Err(e) => return e != "chromium exited",
            }
        }
    }

    /// The events received so far and not yet waited for, in order (left queued).
    pub(crate) fn queued(&mut self) -> &[Event] {
        self.events.make_contiguous()
    }

    /// The events received so far and not yet waited for, in order; the queue is left
    /// empty.
    pub(crate) fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events).into()
    }
}

/// `Target.setAutoAttach`'s parameters: every target, held until told to run, on the
/// one pipe (flat sessions).
fn auto_attach_params() -> Value {
    json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true})
}

/// `Runtime.evaluate`'s result.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Evaluated {
    /// The value.
    result: RemoteObject,
    /// Set when the expression threw.
    #[serde(default)]
    exception_details: Option<ExceptionDetails>,
}

/// A value returned by value.
#[derive(Deserialize)]
struct RemoteObject {
    /// The value (absent for `undefined`).
    #[serde(default)]
    value: Value,
}

/// Why an evaluation threw.
#[derive(Deserialize)]
struct ExceptionDetails {
    /// The message.
    text: String,
}

/// The message pump: reads the browser's NUL-separated messages and sends each that
/// parses as a message to `tx`, until the browser closes its end or nobody listens any
/// more.
fn pump(from_browser: std::io::PipeReader, tx: mpsc::Sender<Message>) {
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
                if let Ok(m) = serde_json::from_slice::<Message>(&buf) {
                    if tx.send(m).is_err() {
                        break;
                    }
                }
            }
        }
    }
}
