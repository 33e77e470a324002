//! The `objects` table: one record per HAR entry of each load, keyed by the load's
//! experiment, network, variant, page and run (the columns it shares with `loads`).

use super::column::{known, measured, non_empty, Column};
use crate::results::Row;
use speedy_archive::date::parse_ms;
use speedy_archive::har::{Entry, Har};
use std::rc::Rc;

/// The keys of the load an object belongs to: together they name one row of `loads`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadKey {
    /// [`Row::experiment`].
    pub experiment: String,
    /// [`Row::network`].
    pub network: String,
    /// [`Row::variant`].
    pub variant: String,
    /// [`Row::page`].
    pub page: String,
    /// [`Row::run`].
    pub run: u32,
}

impl LoadKey {
    /// The keys of `row`.
    pub fn of(row: &Row) -> LoadKey {
        LoadKey {
            experiment: row.experiment.clone(),
            network: row.network.clone(),
            variant: row.variant.clone(),
            page: row.page.clone(),
            run: row.run,
        }
    }
}

/// One entry of a load's HAR, as the `objects` table reads it.
#[derive(Clone, Debug)]
pub struct Object {
    /// The load.
    pub load: Rc<LoadKey>,
    /// The entry's position in the HAR's `log.entries` (0-based).
    pub index: usize,
    /// When the entry started, ms after its page's `startedDateTime` (navigation start).
    pub start_ms: f64,
    /// The entry, through the one HAR model.
    pub entry: Entry,
}

impl Object {
    /// Failed as the lab counts it ([`Entry::failed`]).
    pub fn failed(&self) -> bool {
        self.entry.failed()
    }
}

type C = Column<Object>;

/// The columns of `objects`, in order.
pub fn columns() -> Vec<Column<Object>> {
    let mut c = keys();
    c.extend(request());
    c.extend(sizes());
    c.extend(timings());
    c
}

/// The load's keys and the entry's place in its HAR.
fn keys() -> Vec<C> {
    vec![
        C::str("experiment", |o| &o.load.experiment),
        C::str("network", |o| &o.load.network),
        C::str("variant", |o| &o.load.variant),
        C::str("page", |o| &o.load.page),
        C::int("run", "", |o| o.load.run),
        C::int("entry", "", |o| o.index),
    ]
}

/// What was asked, how it was answered, and over which connection.
fn request() -> Vec<C> {
    vec![
        C::str("url", |o| &o.entry.request.url),
        C::str("method", |o| &o.entry.request.method),
        C::int("status", "", |o| o.entry.response.status),
        C::opt_str("protocol", |o| non_empty(&o.entry.response.http_version)),
        C::opt_str("mime_type", |o| {
            non_empty(&o.entry.response.content.mime_type)
        }),
        C::opt_str("resource_type", |o| o.entry.resource_type.as_deref()),
        C::opt_str("priority", |o| o.entry.priority.as_deref()),
        C::opt_int("spdy_priority", "", |o| o.entry.spdy_priority),
        C::bool("pushed", |o| o.entry.was_pushed),
        C::bool("failed", Object::failed),
        C::opt_str("error", |o| o.entry.error.as_deref()),
        C::opt_str("server_ip", |o| o.entry.server_ip_address.as_deref()),
        C::opt_int("connection_id", "", |o| o.entry.connection_id),
    ]
}

/// Header and body sizes (HAR's `-1`, unknown, is null).
fn sizes() -> Vec<C> {
    vec![
        C::opt_int("request_headers_size", "bytes", |o| {
            known(o.entry.request.headers_size)
        }),
        C::opt_int("response_headers_size", "bytes", |o| {
            known(o.entry.response.headers_size)
        }),
        C::opt_int("body_size", "bytes", |o| known(o.entry.response.body_size)),
        C::opt_int("content_size", "bytes", |o| {
            known(o.entry.response.content.size)
        }),
        C::opt_int("transfer_size", "bytes", |o| o.entry.response.transfer_size),
    ]
}

/// When the entry started and its phases (HAR's `-1`, does not apply, is null).
fn timings() -> Vec<C> {
    vec![
        C::opt_float("start_ms", "ms", |o| Some(o.start_ms)),
        C::opt_float("time_ms", "ms", |o| measured(o.entry.time)),
        C::opt_float("blocked_ms", "ms", |o| measured(o.entry.timings.blocked)),
        C::opt_float("dns_ms", "ms", |o| measured(o.entry.timings.dns)),
        C::opt_float("connect_ms", "ms", |o| measured(o.entry.timings.connect)),
        C::opt_float("ssl_ms", "ms", |o| measured(o.entry.timings.ssl)),
        C::opt_float("send_ms", "ms", |o| measured(o.entry.timings.send)),
        C::opt_float("wait_ms", "ms", |o| measured(o.entry.timings.wait)),
        C::opt_float("receive_ms", "ms", |o| measured(o.entry.timings.receive)),
    ]
}

/// The objects of `row`'s load in its HAR: the entries of the page the row measured (a
/// browsing session's visit [`Row::session_visit`], otherwise the last page, as the
/// runner measures a revisit's second), in HAR order. Errors say what is wrong in the
/// HAR (not its path).
pub fn of_load(row: &Row, har: &Har) -> Result<Vec<Object>, String> {
    let pages = &har.log.pages;
    let i = match row.session_visit {
        Some(v) => v as usize,
        None => pages.len().saturating_sub(1),
    };
    let page = pages.get(i).ok_or_else(|| {
        format!(
            "log.pages[{i}]: no such page (the HAR has {}) for the row's load",
            pages.len()
        )
    })?;
    let date = |what: String, s: &str| {
        parse_ms(s).ok_or_else(|| format!("{what}.startedDateTime {s:?}: not a date"))
    };
    let navigation = date(format!("log.pages[{i}]"), &page.started_date_time)?;
    // A HAR of one page holds only that page's entries, with or without `pageref`.
    let only_page = pages.len() == 1;
    let load = Rc::new(LoadKey::of(row));
    let mut objects = Vec::new();
    for (index, entry) in har.log.entries.iter().enumerate() {
        if !only_page && entry.pageref.as_deref() != Some(page.id.as_str()) {
            continue;
        }
        let start = date(format!("log.entries[{index}]"), &entry.started_date_time)?;
        objects.push(Object {
            load: load.clone(),
            index,
            start_ms: start - navigation,
            entry: entry.clone(),
        });
    }
    Ok(objects)
}
