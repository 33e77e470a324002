//! The fidelity check (`speedy lab validate`): how closely the loader stands in for a
//! browser. It is an ordinary experiment whose variants come in pairs, the same
//! protocol loaded by the loader and by headless Chromium (`client = "chromium"`), run
//! by the lab's runner like any other: the same namespaces, link, replay server, CA,
//! fresh link seeds per (page, run) so both clients of a run meet the same loss
//! sequence, and Chromium's CPU share in the lanes. Its answer is the agreement table
//! ([`agreement`]): per network × calibration × protocol, the loader's onLoad over
//! Chromium's.
//!
//! `speedy lab validate EXPERIMENT` keeps the experiment's pages, networks, runs, seed and
//! timeout and replaces its variants with [`PAIRS`] (HTTP/1.1, h2 and h3, all encrypted,
//! as Chromium speaks h2 only over TLS); an experiment that already has Chromium variants
//! runs as it is. `speedy lab validate all` is the built-in `validate` experiment: three
//! page calibrations, four networks, three protocols, both clients.

pub mod agreement;

use crate::experiment::{Client, Experiment};
use std::path::Path;

/// The variants a fidelity check gives an experiment: each protocol twice, the loader's
/// first (the baseline, HTTP/1.1's), Chromium's against it, so that the summary's
/// speedup of a Chromium variant is the loader's onLoad over Chromium's. The loader's
/// variants take Chromium's limit on HTTP/1.1 connections in all (256, the Chromium rows'
/// `max_connections`), not the loader's default of 32 (the whitepaper era's).
pub const PAIRS: &str = r#"
[[variant]]
name = "http1"
protocol = "http1"
max_connections = 256
tls = true
baseline = true
[[variant]]
name = "http1-chromium"
protocol = "http1"
tls = true
client = "chromium"
against = "http1"
[[variant]]
name = "h2"
protocol = "h2"
max_connections = 256
tls = true
[[variant]]
name = "h2-chromium"
protocol = "h2"
tls = true
client = "chromium"
against = "h2"
[[variant]]
name = "h3"
protocol = "h3"
max_connections = 256
[[variant]]
name = "h3-chromium"
protocol = "h3"
client = "chromium"
against = "h3"
"#;

/// The experiment a fidelity check of `exp` runs: `exp` itself when it has Chromium
/// variants; otherwise its pages, networks, runs, seed and timeout with [`PAIRS`] as its
/// variants (no revisits or browsing sessions: each load is a fresh page load, as
/// Chromium's are), named `NAME-validate`.
pub fn paired(exp: &Experiment) -> Result<Experiment, String> {
    if exp.variants.iter().any(|v| v.client == Client::Chromium) {
        return Ok(exp.clone());
    }
    // The pairs are parsed as a whole experiment so that they are checked as any are;
    // only their variants are kept.
    let text = format!(
        "name = \"pairs\"\n[pages]\nsynth = 1\n[[network]]\nname = \"n\"\ndown = \"1mbit\"\n\
         up = \"1mbit\"\nrtt_ms = 10\n{PAIRS}"
    );
    let pairs = crate::experiment::parse(&text, "the fidelity check's pairs", Path::new("."))?;
    let mut out = exp.clone();
    out.name = format!("{}-validate", exp.name);
    out.variants = pairs.variants;
    out.revisit_after = None;
    out.session_think = None;
    for n in &mut out.networks {
        n.variants = None;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_experiment_gets_its_pages_and_networks_with_both_clients_per_protocol() {
        let quick = crate::experiment::named("quick").unwrap();
        let v = paired(&quick).unwrap();
        assert_eq!(v.name, "quick-validate");
        assert_eq!(v.networks.len(), quick.networks.len());
        assert_eq!((v.runs, v.seed), (quick.runs, quick.seed));
        let names: Vec<&str> = v.variants.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "http1",
                "http1-chromium",
                "h2",
                "h2-chromium",
                "h3",
                "h3-chromium"
            ]
        );
        assert!(v.variants.iter().all(|x| x.tls || x.name.starts_with("h3")));
        let chromium = v.variants.iter().filter(|x| x.client == Client::Chromium);
        assert_eq!(chromium.count(), 3);
        // An experiment with Chromium variants already is run as it is.
        let all = crate::experiment::named("validate").unwrap();
        assert_eq!(paired(&all).unwrap().variants.len(), all.variants.len());
    }

    #[test]
    fn the_loader_is_checked_with_chromiums_connection_limit() {
        let all = crate::experiment::named("validate").unwrap();
        let quick = paired(&crate::experiment::named("quick").unwrap()).unwrap();
        let chromium_limit = crate::runner::CHROMIUM_HTTP1_LIMITS.1 as usize;
        for v in all.variants.iter().chain(&quick.variants) {
            let want = (v.client == Client::Loader).then_some(chromium_limit);
            assert_eq!(v.max_connections, want, "{}", v.name);
        }
    }
}
