//! `speedy lab --merge`: the rows of shards (or of runs of one experiment) into one
//! results file, refusing rows of another experiment, seed or build, and incomplete
//! shard sets, by name.

use crate::results::{append_row, read_rows, Row};
use crate::runner::key;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Why two rows may not be merged: a different experiment, seed or build, by name.
fn mixed(first: &Row, r: &Row) -> Option<String> {
    if first.experiment != r.experiment {
        return Some(format!(
            "rows of experiment {:?}, the others are of {:?}: refusing to merge different experiments",
            r.experiment, first.experiment
        ));
    }
    if let (Some(a), Some(b)) = (first.seed, r.seed) {
        if a != b {
            return Some(format!(
                "rows of seed {b}, the others of seed {a}: refusing to merge runs of different seeds"
            ));
        }
    }
    if let (Some(a), Some(b)) = (&first.build, &r.build) {
        if a != b {
            return Some(format!(
                "rows measured by {b}, the others by {a}: refusing to merge results of different builds"
            ));
        }
    }
    None
}

/// Merges shard results (and their HARs, which stay where they are when the shards
/// share an output directory) into `out/results.jsonl`; returns the row count. Rows of
/// another experiment, seed or build are refused, by name.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<usize, String> {
    if let Some(f) = out.ancestors().find(|a| a.exists()).filter(|a| !a.is_dir()) {
        return Err(format!(
            "--out {}: {} is not a directory",
            out.display(),
            f.display()
        ));
    }
    let mut seen = HashSet::new();
    // (the directory its HAR paths are relative to, the row)
    let mut rows: Vec<(PathBuf, Row)> = Vec::new();
    for dir in inputs {
        if !dir.exists() {
            return Err(format!("{}: no such file or directory", dir.display()));
        }
        let files: Vec<PathBuf> = if dir.is_file() {
            vec![dir.clone()]
        } else {
            std::fs::read_dir(dir)
                .map_err(|e| format!("{}: {e}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("results") && n.ends_with(".jsonl"))
                })
                .collect()
        };
        let mut files = files;
        if files.is_empty() {
            return Err(format!(
                "{}: no results*.jsonl in it (the --out directory of a run or shard)",
                dir.display()
            ));
        }
        // Deterministic: shard files in name order, so a duplicate load keeps the same row
        // whatever order the directory lists them in.
        files.sort();
        check_shards(&files)?;
        for f in files {
            let base = f.parent().unwrap_or(Path::new("."));
            let file_rows = read_rows(&f)?;
            let first = rows.first().map(|r| &r.1).or(file_rows.first()).cloned();
            if let Some(why) = first
                .as_ref()
                .and_then(|first| file_rows.iter().find_map(|r| mixed(first, r)))
            {
                return Err(format!("{}: {why}", f.display()));
            }
            for r in file_rows {
                if seen.insert(key(&r.page, &r.network, &r.variant, r.run)) {
                    rows.push((base.to_path_buf(), r));
                }
            }
        }
    }
    if rows.is_empty() {
        let names: Vec<String> = inputs.iter().map(|d| d.display().to_string()).collect();
        return Err(format!(
            "{}: no rows to merge (nothing written)",
            names.join(", ")
        ));
    }
    // Only now is anything written: a refused merge leaves no output behind.
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for (base, r) in &rows {
        // A row's files: its HAR, the loader's stderr kept beside it, its proxy's series.
        let har = Path::new(&r.har);
        let files = [
            Some(har.to_path_buf()),
            Some(har.with_extension("stderr.txt")),
            r.tcp_series.as_ref().map(PathBuf::from),
        ];
        for rel in files.into_iter().flatten() {
            let (src, dst) = (base.join(&rel), out.join(&rel));
            if src != dst && src.exists() {
                std::fs::create_dir_all(dst.parent().expect("parent"))
                    .map_err(|e| e.to_string())?;
                std::fs::copy(&src, &dst).map_err(|e| format!("{}: {e}", src.display()))?;
            }
        }
    }
    let res = out.join("results.jsonl");
    let _ = std::fs::remove_file(&res);
    for (_, r) in &rows {
        append_row(&res, r)?;
    }
    Ok(rows.len())
}

/// Refuses an incomplete set of shard files: for every `results-shardIofN.jsonl` given,
/// every I of that N must be there too.
fn check_shards(files: &[PathBuf]) -> Result<(), String> {
    let mut sets: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for f in files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if let Some((i, n)) = name
            .strip_prefix("results-shard")
            .and_then(|r| r.strip_suffix(".jsonl"))
            .and_then(|r| r.split_once("of"))
        {
            if let (Ok(i), Ok(n)) = (i.parse::<usize>(), n.parse::<usize>()) {
                sets.entry(n).or_default().push(i);
            }
        }
    }
    for (n, have) in sets {
        let missing: Vec<String> = (0..n)
            .filter(|i| !have.contains(i))
            .map(|i| format!("results-shard{i}of{n}.jsonl"))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "incomplete shards: missing {} (run them, or merge without the {n}-shard set)",
                missing.join(", ")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_refuses_other_experiments_seeds_and_builds_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let row = |page: &str, exp: &str, seed: u64, build: &str| -> Row {
            serde_json::from_value(serde_json::json!({
                "experiment": exp, "seed": seed, "build": build, "page": page, "network": "n",
                "network_desc": "d", "variant": "v", "baseline": false, "protocol": "spdy/3.1",
                "tls": false, "run": 0, "on_load_ms": 1.0, "on_content_load_ms": 1.0,
                "objects": 1, "failed_objects": 0, "bytes_down": 1, "bytes_up": 1,
                "packets_down": 1, "packets_up": 1, "link_drops": 0,
                "header_bytes_sent_raw": 0, "header_bytes_sent_compressed": 0,
                "header_bytes_received_raw": 0, "header_bytes_received_compressed": 0,
                "connections": 1, "tcp_retransmissions": 0, "har": "h"
            }))
            .unwrap()
        };
        let write = |name: &str, r: &Row| {
            let d = dir.path().join(name);
            std::fs::create_dir_all(&d).unwrap();
            crate::results::append_row(&d.join("results.jsonl"), r).unwrap();
            d
        };
        let a = write("a", &row("p0", "x", 1, "speedy 0.1.0 sha256:aa"));
        let same = write("same", &row("p1", "x", 1, "speedy 0.1.0 sha256:aa"));
        let out = dir.path().join("out");
        assert_eq!(merge(&[a.clone(), same], &out).unwrap(), 2);
        for (name, r, want) in [
            (
                "exp",
                row("p1", "y", 1, "speedy 0.1.0 sha256:aa"),
                "experiment \"y\"",
            ),
            (
                "seed",
                row("p1", "x", 2, "speedy 0.1.0 sha256:aa"),
                "seed 2, the others of seed 1",
            ),
            (
                "build",
                row("p1", "x", 1, "speedy 0.1.0 sha256:bb"),
                "measured by speedy 0.1.0 sha256:bb",
            ),
        ] {
            let other = write(name, &r);
            let e = merge(&[a.clone(), other], &out).unwrap_err();
            assert!(e.contains(want) && e.contains(name), "{e}");
        }
    }

    #[test]
    fn a_merge_copies_each_rows_har_the_loaders_stderr_and_the_proxy_series() {
        let dir = tempfile::tempdir().unwrap();
        let shard = dir.path().join("shard");
        let mut r: Row = serde_json::from_value(serde_json::json!({
            "experiment": "x", "page": "p", "network": "n", "network_desc": "d",
            "variant": "v", "baseline": false, "protocol": "spdy/3.1", "tls": false,
            "run": 0, "on_load_ms": 1.0, "on_content_load_ms": 1.0, "objects": 1,
            "failed_objects": 0, "bytes_down": 1, "bytes_up": 1, "packets_down": 1,
            "packets_up": 1, "link_drops": 0, "header_bytes_sent_raw": 0,
            "header_bytes_sent_compressed": 0, "header_bytes_received_raw": 0,
            "header_bytes_received_compressed": 0, "connections": 1,
            "tcp_retransmissions": 0, "har": "hars/n/v/p-run0.har"
        }))
        .unwrap();
        r.tcp_series = Some("series/n/v/p-run0.jsonl".into());
        let files = [
            "hars/n/v/p-run0.har",
            "hars/n/v/p-run0.stderr.txt",
            "series/n/v/p-run0.jsonl",
        ];
        for f in files {
            let p = shard.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, f).unwrap();
        }
        crate::results::append_row(&shard.join("results.jsonl"), &r).unwrap();
        let out = dir.path().join("out");
        assert_eq!(merge(&[shard], &out).unwrap(), 1);
        for f in files {
            assert_eq!(std::fs::read_to_string(out.join(f)).unwrap(), f);
        }
    }

    #[test]
    fn refuses_incomplete_shard_sets() {
        let f = |s: &str| PathBuf::from(format!("/x/{s}"));
        assert!(
            check_shards(&[f("results-shard0of2.jsonl"), f("results-shard1of2.jsonl")]).is_ok()
        );
        let e = check_shards(&[f("results-shard0of3.jsonl"), f("results-shard2of3.jsonl")])
            .unwrap_err();
        assert!(e.contains("results-shard1of3.jsonl"), "{e}");
        assert!(check_shards(&[f("results.jsonl")]).is_ok());
    }
}
