//! End-to-end tests of `speedy corpus synth/import/export-har` through the real program.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_speedy");

/// A temporary directory removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("speedy-corpus-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../speedy-archive/tests/data")
        .join(name)
}

fn speedy(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run speedy")
}

fn ok(args: &[&str]) -> String {
    let o = speedy(args);
    assert!(
        o.status.success(),
        "speedy {args:?}: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn fail(args: &[&str]) -> String {
    let o = speedy(args);
    assert_eq!(o.status.code(), Some(2), "speedy {args:?} should fail");
    assert!(o.stdout.is_empty());
    String::from_utf8(o.stderr).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn archive_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("archive.json")).unwrap()).unwrap()
}

#[test]
fn synth_export_import_round_trip_through_the_program() {
    let d = Dir::new("synth");
    let (a, har, b) = (d.0.join("a"), d.0.join("a.har"), d.0.join("b"));
    let out = ok(&[
        "corpus",
        "synth",
        "--out",
        s(&a),
        "--pages",
        "3",
        "--seed",
        "4",
    ]);
    assert!(
        out.starts_with(&format!("{}: 3 pages, ", a.display())),
        "{out}"
    );
    assert!(out.trim_end().ends_with(" domains"), "{out}");
    // Deterministic for a seed.
    let again = d.0.join("again");
    ok(&[
        "corpus",
        "synth",
        "--out",
        s(&again),
        "--pages",
        "3",
        "--seed",
        "4",
    ]);
    assert_eq!(archive_json(&a), archive_json(&again));
    let out = ok(&["corpus", "export-har", s(&a), "--out", s(&har)]);
    let ja = archive_json(&a);
    let n = ja["objects"].as_array().unwrap().len();
    assert_eq!(
        out.trim(),
        format!("{}: HAR 1.2, 3 pages, {n} entries", har.display())
    );
    let h: serde_json::Value = serde_json::from_slice(&std::fs::read(&har).unwrap()).unwrap();
    assert_eq!(h["log"]["version"], "1.2");
    assert_eq!(h["log"]["creator"]["name"], "speedy");
    let out = ok(&["corpus", "import", s(&har), "--out", s(&b)]);
    assert!(
        out.contains(&format!("(discovery from: {} _speedy)", n - 3)),
        "{out}"
    );
    // Same pages, URLs, statuses, sizes and parents; bodies byte for byte.
    let jb = archive_json(&b);
    let key = |j: &serde_json::Value| {
        let objs = j["objects"].as_array().unwrap();
        let mut v: Vec<String> = objs
            .iter()
            .map(|o| {
                let parent = o["discovery"]["parent"]
                    .as_u64()
                    .map(|p| objs[p as usize]["url"].as_str().unwrap().to_string());
                format!(
                    "{} {} {} {:?} {}",
                    o["url"], o["status"], o["body"]["size"], parent, o["body"]["sha256"]
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(key(&ja), key(&jb));
    // The default page count is 25.
    let def = d.0.join("default");
    let out = ok(&["corpus", "synth", "--out", s(&def)]);
    assert!(out.contains(": 25 pages, "), "{out}");
}

#[test]
fn import_of_the_real_tools_files() {
    let d = Dir::new("import");
    let (h, w) = (d.0.join("h"), d.0.join("w"));
    let out = ok(&[
        "corpus",
        "import",
        s(&fixture("chromium.har")),
        "--out",
        s(&h),
    ]);
    assert_eq!(
        out.trim(),
        format!("{}: 2 pages, 17 objects, 2795 bytes, 1 domains (discovery from: 1 body, 13 initiator, 1 timings)", h.display())
    );
    let out = ok(&[
        "corpus",
        "import",
        s(&fixture("wget.warc.gz")),
        "--out",
        s(&w),
    ]);
    assert!(out.contains(": 2 pages, 15 objects, "), "{out}");
    // Every stored body is on disk under its sha256.
    for dir in [&h, &w] {
        let j = archive_json(dir);
        for o in j["objects"].as_array().unwrap() {
            if o["body"]["kind"] == "stored" {
                let p = dir
                    .join("bodies")
                    .join(o["body"]["sha256"].as_str().unwrap());
                assert_eq!(
                    std::fs::metadata(&p).unwrap().len(),
                    o["body"]["size"].as_u64().unwrap()
                );
            }
        }
    }
    // Warnings go to stderr, naming the entries; --quiet drops them.
    let o = speedy(&[
        "corpus",
        "import",
        s(&fixture("har11-no-pages.har")),
        "--out",
        s(&d.0.join("o")),
    ]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("har11-no-pages.har: entries[3]: data:"),
        "{err}"
    );
    let o = speedy(&[
        "corpus",
        "import",
        "--quiet",
        s(&fixture("har11-no-pages.har")),
        "--out",
        s(&d.0.join("q")),
    ]);
    assert!(o.status.success() && o.stderr.is_empty());
}

#[test]
fn bad_input_is_named_and_exits_2() {
    let d = Dir::new("bad");
    let f = fixture("bad-content.har");
    let err = fail(&["corpus", "import", s(&f), "--out", s(&d.0.join("x"))]);
    assert_eq!(
        err.trim(),
        format!("speedy corpus import: {}: entries[2].response.content: expected an object, found a string", f.display())
    );
    assert!(!d.0.join("x").exists(), "nothing written for a bad file");
    let missing = d.0.join("missing.har");
    let err = fail(&["corpus", "import", s(&missing), "--out", s(&d.0.join("x"))]);
    assert!(
        err.contains(&format!("{}: No such file", missing.display())),
        "{err}"
    );
    let err = fail(&[
        "corpus",
        "export-har",
        s(&d.0),
        "--out",
        s(&d.0.join("y.har")),
    ]);
    assert!(err.contains("archive.json"), "{err}");
    // Usage errors are clap's (exit 2 with a usage line).
    let o = speedy(&["corpus", "synth"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--out <DIR>"));
    let o = speedy(&[
        "corpus",
        "synth",
        "--out",
        s(&d.0.join("z")),
        "--pages",
        "many",
    ]);
    assert_eq!(o.status.code(), Some(2));
}
