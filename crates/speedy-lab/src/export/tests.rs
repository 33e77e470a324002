use super::*;
use crate::tcpinfo::ConnSample;
use ::parquet::file::reader::{FileReader, SerializedFileReader};
use ::parquet::record::Field;
use ::parquet::schema::types::Type as PqType;
use serde_json::{json, Value};
use speedy_net::sctp::counters::Counters;
use std::collections::BTreeMap;

/// A row as the runner writes it, with its HAR at `har`.
fn row(page: &str, run: u32, har: &str) -> Row {
    serde_json::from_value(json!({
        "experiment": "x", "page": page, "network": "dsl",
        "network_desc": "2 Mbit/s down, 375 kbit/s up", "variant": "spdy",
        "baseline": false, "protocol": "spdy/3.1", "tls": true, "run": run,
        "on_load_ms": 1500.25, "on_content_load_ms": 700.0, "objects": 2,
        "failed_objects": 1, "bytes_down": 1000, "bytes_up": 100, "packets_down": 10,
        "packets_up": 9, "link_drops": 1, "header_bytes_sent_raw": 500,
        "header_bytes_sent_compressed": 100, "header_bytes_received_raw": 400,
        "header_bytes_received_compressed": 90, "connections": 1, "tcp_retransmissions": 0,
        "har": har
    }))
    .unwrap()
}

fn entry(page: &str, start: &str, url: &str, status: u16, timings: Value, ext: Value) -> Value {
    let mut e = json!({
        "pageref": page, "startedDateTime": start, "time": 50.5,
        "request": {"method": "GET", "url": url, "httpVersion": "spdy/3.1", "cookies": [],
            "headers": [], "queryString": [], "headersSize": 120, "bodySize": 0},
        "response": {"status": status, "statusText": "", "httpVersion": "spdy/3.1",
            "cookies": [], "headers": [], "content": {"size": 3000, "mimeType": "text/css"},
            "redirectURL": "", "headersSize": -1, "bodySize": 2000},
        "cache": {}, "timings": timings
    });
    for (k, v) in ext.as_object().unwrap() {
        e[k] = v.clone();
    }
    e
}

fn page(id: &str, start: &str) -> Value {
    json!({"startedDateTime": start, "id": id, "title": "http://a/",
        "pageTimings": {"onContentLoad": 700.0, "onLoad": 1500.25}})
}

fn har(pages: Vec<Value>, entries: Vec<Value>) -> Value {
    json!({"log": {"version": "1.2", "creator": {"name": "speedy", "version": "0"},
        "pages": pages, "entries": entries}})
}

/// A results directory: a load with two objects (quoting, nulls), a timed-out load of
/// an SCTP variant, and two visits of a browsing session sharing one HAR.
fn results_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("hars")).unwrap();
    let t0 = "2026-01-01T00:00:00.000Z";
    let full = json!({"blocked": 1.5, "dns": 0.25, "connect": 10.0, "ssl": 5.0,
        "send": 0.5, "wait": 30.0, "receive": 8.0});
    let bare = json!({"send": 0.0, "wait": 15.0, "receive": -1});
    let a = har(
        vec![page("p1", t0)],
        vec![
            entry(
                "p1",
                "2026-01-01T00:00:00.010Z",
                "http://a/x?q=1,2",
                200,
                full.clone(),
                json!({"_priority": "VeryHigh", "_spdy_priority": 0, "_connection_id": 3,
                    "_resourceType": "stylesheet", "_was_pushed": 1,
                    "serverIPAddress": "100.65.0.1"}),
            ),
            entry(
                "p1",
                "2026-01-01T00:00:00.250Z",
                "http://a/\"quoted\"",
                0,
                bare.clone(),
                json!({"_error": "reset,\r\nby peer"}),
            ),
        ],
    );
    let b = har(vec![page("p1", t0)], vec![]);
    let t1 = "2026-01-01T00:00:05.000Z";
    let s = har(
        vec![page("v0", t0), page("v1", t1)],
        vec![
            entry("v0", t0, "http://s/0", 200, bare.clone(), json!({})),
            entry(
                "v1",
                "2026-01-01T00:00:05.100Z",
                "http://s/1",
                200,
                bare,
                json!({}),
            ),
            entry(
                "v1",
                "2026-01-01T00:00:05.300Z",
                "http://s/2",
                404,
                full,
                json!({}),
            ),
        ],
    );
    for (name, h) in [("a.har", a), ("b.har", b), ("s.har", s)] {
        std::fs::write(d.path().join("hars").join(name), h.to_string()).unwrap();
    }
    let mut ra = row("a, \"the\"\npage", 0, "hars/a.har");
    ra.headroom = Some(String::new());
    ra.sweep = Some(crate::results::SweepPoint {
        sweep: "loss sweep".into(),
        param: "loss".into(),
        value: 0.01,
    });
    ra.server_connections = vec![ConnSample::default(); 3];
    let mut rb = row("b", 1, "hars/b.har");
    rb.on_load_ms = -1.0;
    rb.transport = Some(speedy_net::Carrier::Sctp);
    rb.server_sctp = Some(Counters {
        t3_timeouts: 2,
        ..Counters::default()
    });
    let mut visits = Vec::new();
    for v in 0..2 {
        let mut r = row(&format!("s{v}"), 0, "hars/s.har");
        r.session_visit = Some(v);
        r.session_think_ms = Some(5000);
        visits.push(r);
    }
    let mut text = String::new();
    for r in [&ra, &rb, &visits[0], &visits[1]] {
        text.push_str(&serde_json::to_string(r).unwrap());
        text.push('\n');
    }
    std::fs::write(d.path().join("results.jsonl"), text).unwrap();
    d
}

/// Splits RFC 4180 CSV into records of fields, telling a null (empty, unquoted: `None`)
/// from an empty string (`""`: `Some("")`).
fn parse_csv(text: &str) -> Vec<Vec<Option<String>>> {
    let mut records = Vec::new();
    let (mut record, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if field.is_empty() && !quoted => {
                quoted = true;
                loop {
                    match chars.next().expect("an unterminated quoted field") {
                        '"' if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        '"' => break,
                        c => field.push(c),
                    }
                }
            }
            ',' | '\r' => {
                if c == '\r' {
                    assert_eq!(chars.next(), Some('\n'), "CR without LF");
                }
                record.push((quoted || !field.is_empty()).then(|| std::mem::take(&mut field)));
                quoted = false;
                if c == '\r' {
                    records.push(std::mem::take(&mut record));
                }
            }
            '\n' => panic!("a bare LF outside quotes"),
            c => {
                assert!(!quoted, "text after a closing quote");
                field.push(c);
            }
        }
    }
    assert!(field.is_empty() && record.is_empty(), "no CRLF at the end");
    records
}

/// The CSV text of a cell, as the writer should give it (before quoting).
fn csv_text(c: &Cell) -> Option<String> {
    match c {
        Cell::Null => None,
        Cell::Bool(b) => Some(b.to_string()),
        Cell::Int(v) => Some(v.to_string()),
        Cell::Float(v) => Some(format!("{v:?}")),
        Cell::Str(s) => Some(s.to_string()),
    }
}

/// The records of both tables as the columns read them off the inputs.
fn expected(dir: &Path) -> (Vec<Row>, Vec<Object>) {
    let rows = read_rows(&dir.join("results.jsonl")).unwrap();
    let mut objects = Vec::new();
    for r in &rows {
        let h = Har::read(&dir.join(&r.har)).unwrap();
        objects.extend(objects::of_load(r, &h).unwrap());
    }
    (rows, objects)
}

fn check_csv<T>(path: &Path, columns: &[Column<T>], records: &[T]) {
    let text = std::fs::read_to_string(path).unwrap();
    let parsed = parse_csv(&text);
    let header: Vec<Option<String>> = columns.iter().map(|c| Some(c.name.into())).collect();
    assert_eq!(parsed[0], header);
    assert_eq!(parsed.len(), records.len() + 1);
    for (rec, line) in records.iter().zip(&parsed[1..]) {
        let want: Vec<Option<String>> = columns.iter().map(|c| csv_text(&c.get(rec))).collect();
        assert_eq!(line, &want);
    }
}

#[test]
fn csv_round_trips_with_quoting_and_nulls() {
    let d = results_dir();
    let out = d.path().join("out");
    let e = export(d.path(), &out, Format::Csv).unwrap();
    assert_eq!((e.loads.rows, e.objects.rows), (4, 5));
    assert_eq!(e.loads.path, out.join("loads.csv"));
    let (rows, objects) = expected(d.path());
    check_csv(&e.loads.path, &load_columns(), &rows);
    check_csv(&e.objects.path, &object_columns(), &objects);

    // The cells the check above covers, spelled out once.
    let loads = parse_csv(&std::fs::read_to_string(&e.loads.path).unwrap());
    let col = |name: &str| load_columns().iter().position(|c| c.name == name).unwrap();
    let a = &loads[1];
    assert_eq!(a[col("page")].as_deref(), Some("a, \"the\"\npage"));
    assert_eq!(a[col("sweep_param")].as_deref(), Some("loss"));
    assert_eq!(a[col("server_connections")].as_deref(), Some("3"));
    // An empty string is `""`, a null nothing.
    assert_eq!(a[col("headroom")].as_deref(), Some(""));
    assert_eq!(a[col("server_sctp_t3_timeouts")], None);
    assert_eq!(a[col("on_content_load_ms")].as_deref(), Some("700.0"));
    let b = &loads[2];
    // No onLoad (timed out) is null, not -1 or 0.
    assert_eq!(b[col("on_load_ms")], None);
    assert_eq!(b[col("server_sctp_t3_timeouts")].as_deref(), Some("2"));
    assert_eq!(b[col("loader_sctp_t3_timeouts")], None);
    assert_eq!(b[col("transport")].as_deref(), Some("sctp"));
    let text = std::fs::read_to_string(&e.loads.path).unwrap();
    assert!(text.contains(",\"a, \"\"the\"\"\npage\","), "{text}");
    assert!(text.contains(",\"2 Mbit/s down, 375 kbit/s up\","));

    let objs = parse_csv(&std::fs::read_to_string(&e.objects.path).unwrap());
    let col = |name: &str| {
        object_columns()
            .iter()
            .position(|c| c.name == name)
            .unwrap()
    };
    let cells = |r: &Vec<Option<String>>, names: &[&str]| -> Vec<Option<String>> {
        names.iter().map(|n| r[col(n)].clone()).collect()
    };
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        cells(
            &objs[1],
            &["url", "start_ms", "dns_ms", "ssl_ms", "connection_id"]
        ),
        [
            s("http://a/x?q=1,2"),
            s("10.0"),
            s("0.25"),
            s("5.0"),
            s("3")
        ]
    );
    // HAR's -1 and absent phases and sizes are null.
    assert_eq!(
        cells(
            &objs[2],
            &["status", "failed", "blocked_ms", "receive_ms", "error"]
        ),
        [s("0"), s("true"), None, None, s("reset,\r\nby peer")]
    );
    assert_eq!(
        cells(&objs[1], &["response_headers_size", "transfer_size"]),
        [None, None]
    );
    // A session's visits each get their own page's entries, timed from that page.
    assert_eq!(
        objs[3..]
            .iter()
            .map(|o| cells(o, &["page", "entry", "start_ms"]))
            .collect::<Vec<_>>(),
        [
            [s("s0"), s("0"), s("0.0")],
            [s("s1"), s("1"), s("100.0")],
            [s("s1"), s("2"), s("300.0")]
        ]
    );
    assert!(!out.join(".loads.csv.partial").exists());
}

/// A parquet value as the cell it should be.
fn cell_of(f: &Field) -> Cell<'static> {
    match f {
        Field::Null => Cell::Null,
        Field::Bool(b) => Cell::Bool(*b),
        Field::Long(v) => Cell::Int(*v),
        Field::Double(v) => Cell::Float(*v),
        Field::Str(s) => Cell::Str(s.clone().into()),
        other => panic!("unexpected parquet value {other:?}"),
    }
}

fn check_parquet<T>(path: &Path, columns: &[Column<T>], records: &[T]) {
    let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
    let schema = reader.metadata().file_metadata().schema();
    let PqType::GroupType { fields, .. } = schema else {
        panic!("not a group")
    };
    assert_eq!(fields.len(), columns.len());
    for (f, c) in fields.iter().zip(columns) {
        assert_eq!(f.name(), c.name);
        assert_eq!(f.is_optional(), c.nullable, "{}", c.name);
    }
    let rows: Vec<_> = reader
        .get_row_iter(None)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(rows.len(), records.len());
    for (rec, row) in records.iter().zip(&rows) {
        let got: Vec<(String, Cell)> = row
            .get_column_iter()
            .map(|(n, f)| (n.clone(), cell_of(f)))
            .collect();
        let want: Vec<(String, Cell)> = columns
            .iter()
            .map(|c| (c.name.to_string(), c.get(rec)))
            .collect();
        assert_eq!(got, want);
    }
}

#[test]
fn parquet_reads_back_the_same_values() {
    let d = results_dir();
    let out = d.path().join("out");
    let e = export(d.path(), &out, Format::Parquet).unwrap();
    assert_eq!((e.loads.rows, e.objects.rows), (4, 5));
    assert_eq!(e.objects.path, out.join("objects.parquet"));
    let (rows, objects) = expected(d.path());
    check_parquet(&e.loads.path, &load_columns(), &rows);
    check_parquet(&e.objects.path, &object_columns(), &objects);
    // The nulls are nulls there too, and units ride in the key-value metadata.
    let reader = SerializedFileReader::new(File::open(&e.loads.path).unwrap()).unwrap();
    let kv = reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .unwrap();
    assert!(kv
        .iter()
        .any(|k| k.key == "unit.on_load_ms" && k.value.as_deref() == Some("ms")));
    let b = reader.get_row_iter(None).unwrap().nth(1).unwrap().unwrap();
    let on_load = load_columns().iter().position(|c| c.name == "on_load_ms");
    assert_eq!(
        b.get_column_iter().nth(on_load.unwrap()).unwrap().1,
        &Field::Null
    );
}

#[test]
fn parquet_splits_row_groups_and_writes_empty_tables() {
    let columns = vec![
        Column::<u64>::int("n", "", |n| *n),
        Column::<u64>::opt_int("odd", "", |n| (n % 2 == 1).then_some(*n)),
    ];
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("t.parquet");
    let mut w = parquet::ParquetWriter::new(&columns, File::create(&path).unwrap()).unwrap();
    let records: Vec<u64> = (0..parquet::ROW_GROUP as u64 + 10).collect();
    for r in &records {
        w.write(r).unwrap();
    }
    assert_eq!(w.finish().unwrap(), records.len() as u64);
    let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
    assert_eq!(reader.metadata().num_row_groups(), 2);
    check_parquet(&path, &columns, &records);

    let w = parquet::ParquetWriter::new(&columns, File::create(&path).unwrap()).unwrap();
    assert_eq!(w.finish().unwrap(), 0);
    check_parquet(&path, &columns, &[]);
}

#[test]
fn a_missing_har_is_an_error_naming_it_and_writes_nothing() {
    let d = results_dir();
    std::fs::remove_file(d.path().join("hars/b.har")).unwrap();
    let out = d.path().join("out");
    for format in [Format::Csv, Format::Parquet] {
        let e = export(d.path(), &out, format).unwrap_err();
        assert!(e.contains("hars/b.har") && e.contains("row 2"), "{e}");
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
    // A HAR that is not one, likewise.
    std::fs::write(d.path().join("hars/b.har"), "{}").unwrap();
    let e = export(d.path(), &out, Format::Csv).unwrap_err();
    assert!(e.contains("hars/b.har") && e.contains("not a HAR"), "{e}");
}

#[test]
fn formats_parse_by_name_and_name_a_bad_one() {
    assert_eq!("csv".parse::<Format>(), Ok(Format::Csv));
    assert_eq!("Parquet".parse::<Format>(), Ok(Format::Parquet));
    let e = "xlsx".parse::<Format>().unwrap_err();
    assert!(e.contains("\"xlsx\""), "{e}");
    assert_eq!(Format::Parquet.to_string(), "parquet");
}

#[test]
fn column_names_are_unique() {
    let mut seen = std::collections::HashSet::new();
    assert!(load_columns().iter().all(|c| seen.insert(c.name)));
    let mut seen = std::collections::HashSet::new();
    assert!(object_columns().iter().all(|c| seen.insert(c.name)));
}

/// Every field of [`Row`] has a column: its name, or its name and `_` before the names of
/// its parts. The literal below lists every field, so a new one fails to compile here
/// until it is given a value (and then a column).
#[test]
fn every_row_field_has_a_column() {
    let r = Row {
        experiment: "x".into(),
        seed: Some(1),
        build: Some("b".into()),
        kernel: Some("6.1.0".into()),
        page: "p".into(),
        network: "n".into(),
        network_desc: "d".into(),
        sweep: Some(crate::results::SweepPoint {
            sweep: "s".into(),
            param: "loss".into(),
            value: 0.1,
        }),
        variant: "v".into(),
        baseline: true,
        protocol: speedy_net::Protocol::H2,
        tls: true,
        client: crate::experiment::Client::Chromium,
        run: 0,
        on_load_ms: 1.0,
        on_content_load_ms: 1.0,
        fcp_ms: Some(1.0),
        lcp_ms: Some(1.0),
        objects: 1,
        failed_objects: 0,
        failures: Some(vec![speedy_browser::report::FailedRequest {
            url: "https://a/x.js".into(),
            status: 0,
            error: Some("stream reset".into()),
        }]),
        bytes_down: 1,
        bytes_up: 1,
        packets_down: 1,
        packets_up: 1,
        link_drops: 0,
        header_bytes_sent_raw: Some(1),
        header_bytes_sent_compressed: Some(1),
        header_bytes_received_raw: Some(1),
        header_bytes_received_compressed: Some(1),
        connections: 1,
        tcp_cc: "cubic".into(),
        quic_cc: Some(speedy_net::h3::QuicCcAlgorithm::Bbr),
        tcp_retransmissions: Some(0),
        har: "h".into(),
        calibration: "web-2010".into(),
        header_compression: "zlib".into(),
        initcwnd: 10,
        initrwnd: Some(10),
        slow_start_after_idle: true,
        rack_tlp: true,
        no_metrics_save: true,
        connections_per_host: 6,
        max_connections: 32,
        variant_index: Some(0),
        against: Some("a".into()),
        server_retransmissions: 0,
        server_rto_timeouts: 0,
        server_segments_out: 0,
        loader_retransmissions: Some(0),
        loader_rto_timeouts: Some(0),
        client_tcp_opens: Some(0),
        server_sctp: Some(Counters::default()),
        loader_sctp: Some(Counters::default()),
        link_late_mean_us: 0,
        link_late_max_us: 0,
        link_stale: Some(3),
        loader_lag_max_us: Some(0),
        notsent_lowat: Some(1),
        replay: Some(crate::results::ReplayMatches {
            query: 1,
            other_host: 2,
            missed: 3,
        }),
        rto_min_ms: Some(1),
        keepalive_ms: Some(1),
        sessions: Some(2),
        tls_hello: Some("plain".into()),
        known_servers: Some(true),
        partition: Some(true),
        spdy_domains: Some(speedy_browser::Domains::Single),
        push: Some(speedy_server::PushPolicy::All),
        hint: Some(true),
        prefetch: Some(true),
        transport: Some(speedy_net::Carrier::Sctp),
        cookie_bundling: Some(true),
        sctp_rto_initial_ms: Some(1),
        sctp_stack: Some(speedy_net::sctp::SctpStack::Usrsctp),
        proxy: Some("spdy".into()),
        revisit_after_ms: Some(1),
        session_think_ms: Some(1),
        session_visit: Some(0),
        tcp_series: Some("s".into()),
        headroom: Some("h".into()),
        server_connections: vec![ConnSample::default()],
    };
    let Value::Object(fields) = serde_json::to_value(&r).unwrap() else {
        panic!("a row is an object")
    };
    let columns = load_columns();
    for key in fields.keys() {
        let covered = columns
            .iter()
            .any(|c| c.name == key || c.name.starts_with(&format!("{key}_")));
        assert!(covered, "Row field {key} has no column in export/loads.rs");
    }
    // And every column has a value for the full row.
    for c in &columns {
        assert_ne!(c.get(&r), Cell::Null, "{}", c.name);
    }
}

/// docs/export.md's column tables: per table (`loads`, `objects`), column → (type, unit).
fn documented() -> BTreeMap<&'static str, BTreeMap<String, (String, String)>> {
    let doc = include_str!("../../../../docs/export.md");
    let mut tables: BTreeMap<&str, BTreeMap<String, (String, String)>> = BTreeMap::new();
    let mut current = None;
    for line in doc.lines() {
        if line.starts_with('#') {
            current = ["loads", "objects"]
                .into_iter()
                .find(|t| line.contains(&format!("`{t}`")));
            continue;
        }
        let Some(table) = current else { continue };
        let cells: Vec<&str> = line.trim().split('|').map(str::trim).collect();
        // `| `name` | type | unit | meaning |`: 6 pieces around the bars.
        if cells.len() < 6 || !cells[1].starts_with('`') {
            continue;
        }
        let name = cells[1].trim_matches('`').to_string();
        let unit = cells[3].trim_matches('`').to_string();
        tables
            .entry(table)
            .or_default()
            .insert(name, (cells[2].to_string(), unit));
    }
    tables
}

fn check_doc<T>(table: &str, columns: &[Column<T>], doc: &BTreeMap<String, (String, String)>) {
    let mut missing = String::new();
    for c in columns {
        let want = (c.kind().to_string(), c.unit.to_string());
        match doc.get(c.name) {
            Some(got) if *got == want => {}
            Some(got) => panic!(
                "docs/export.md, table {table}: {} says {got:?}, the code {want:?}",
                c.name
            ),
            None => missing.push_str(&format!(
                "| `{}` | {} | {} | … |\n",
                c.name,
                c.kind(),
                c.unit
            )),
        }
    }
    assert!(
        missing.is_empty(),
        "docs/export.md, table {table}, lacks these columns:\n{missing}"
    );
    for name in doc.keys() {
        assert!(
            columns.iter().any(|c| c.name == name),
            "docs/export.md, table {table}, documents {name}, which the code does not write"
        );
    }
}

#[test]
fn docs_list_every_column_with_its_type_and_unit() {
    let doc = documented();
    let empty = BTreeMap::new();
    check_doc("loads", &load_columns(), doc.get("loads").unwrap_or(&empty));
    check_doc(
        "objects",
        &object_columns(),
        doc.get("objects").unwrap_or(&empty),
    );
}
