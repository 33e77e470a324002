//! Tests of the experiment parser and the built-in experiments.

use super::*;
use spdy::HeaderCompression;
use speedy_net::Protocol;

fn p(s: &str) -> Result<Experiment, String> {
    parse(s, "x.toml", Path::new("."))
}

#[test]
fn built_ins_parse() {
    for b in BUILT_INS {
        let e = parse(b.toml, b.name, Path::new(".")).unwrap_or_else(|e| panic!("{}: {e}", b.name));
        assert!(e.variants.iter().any(|v| v.baseline), "{}", b.name);
    }
    let w = parse(built_in("whitepaper").unwrap().toml, "w", Path::new(".")).unwrap();
    assert_eq!(w.runs, 10);
    assert!(w.networks.iter().filter(|n| n.sweep.is_some()).count() >= 13);
    // The whitepaper's own conditions on every variant (h3: its initial window;
    // QUIC has its own CUBIC and QPACK).
    assert!(matches!(w.pages, Pages::Synth(25, c) if c.name == "web-2010"));
    for v in &w.variants {
        assert_eq!(v.initcwnd, Some(3), "{}", v.name);
        if v.protocol != Protocol::H3 {
            assert_eq!(v.cc_preference, [CcName::Cubic, CcName::Reno], "{}", v.name);
            assert_eq!(v.header_compression, HeaderCompression::Zlib, "{}", v.name);
            assert!(
                !v.rack_tlp,
                "{}: the era's Linux had no RACK or TLP",
                v.name
            );
        }
    }
    // The factor chain: every SPDY step is against its own HTTP/1.1, on its pages;
    // RACK and TLP come on in the last step only.
    let f = parse(built_in("factors").unwrap().toml, "f", Path::new(".")).unwrap();
    let spdy: Vec<&Variant> = f
        .variants
        .iter()
        .filter(|v| v.protocol == Protocol::Spdy(spdy::Version::V3_1))
        .collect();
    assert_eq!(spdy.len(), 8);
    for v in &spdy {
        let a = v.against.as_deref().unwrap();
        assert_eq!(a, v.name.replace("spdy-", "http1-"));
    }
    let on: Vec<&str> = f
        .variants
        .iter()
        .filter(|v| v.rack_tlp)
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(on, ["http1-rack-tlp", "spdy-rack-tlp"]);
}

/// The experiments the docs give to run (`docs/validate/`) parse, each with its pairs.
#[test]
fn the_docs_experiments_parse() {
    for (name, toml) in [
        (
            "holdout.toml",
            include_str!("../../../../docs/validate/holdout.toml"),
        ),
        (
            "connections.toml",
            include_str!("../../../../docs/validate/connections.toml"),
        ),
        (
            "handshakes.toml",
            include_str!("../../../../docs/validate/handshakes.toml"),
        ),
    ] {
        let e = parse(toml, name, Path::new(".")).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!e.variants.is_empty(), "{name}");
    }
}

#[test]
fn refuses_unknown_keys_with_the_line() {
    let e = p("runs = 2\n[pages]\nsynth = 1\n[[network]]\nprofile = \"whitepaper-dsl\"\nbogus = 3\n[[variant]]\nname=\"a\"\nprotocol=\"spdy\"\n").unwrap_err();
    assert!(
        e.starts_with("x.toml:4:") || e.starts_with("x.toml:6:"),
        "{e}"
    );
    assert!(e.contains("bogus"), "{e}");
}

#[test]
fn refuses_impossible_values_with_the_line() {
    let base = "[pages]\nsynth = 1\n[[network]]\nprofile = \"whitepaper-dsl\"\n";
    let e = p(&format!(
        "{base}[[variant]]\nname=\"a\"\nprotocol=\"spdy/9\"\n"
    ))
    .unwrap_err();
    assert!(e.starts_with("x.toml:5:") && e.contains("protocol"), "{e}");
    let e = p("[pages]\nsynth = 1\n[[network]]\ndown=\"2mbit\"\nup=\"1mbit\"\nloss = 1.5\n[[variant]]\nname=\"a\"\nprotocol=\"spdy\"\n").unwrap_err();
    assert!(e.starts_with("x.toml:3:") && e.contains("loss"), "{e}");
    let e = p("runs = 0\n[pages]\nsynth = 1\n").unwrap_err();
    assert!(e.starts_with("x.toml:1:"), "{e}");
    let e = p("[pages]\narchive = \"/nonexistent/dir\"\n[[network]]\nprofile=\"whitepaper-dsl\"\n[[variant]]\nname=\"a\"\nprotocol=\"spdy\"\n").unwrap_err();
    assert!(
        e.contains("/nonexistent/dir") && e.starts_with("x.toml:1:"),
        "{e}"
    );
    let e = p("[pages]\nsynth = 1\nrecorded_think_time = true\n[[network]]\nprofile=\"whitepaper-dsl\"\n[[variant]]\nname=\"a\"\nprotocol=\"spdy\"\n").unwrap_err();
    assert!(
        e.starts_with("x.toml:1:") && e.contains("recorded_think_time applies to an archive"),
        "{e}"
    );
}

#[test]
fn checks_proxy_variants_and_the_revisit() {
    let base = "revisit_after_ms = 2000\n[pages]\nsynth = 1\n[[network]]\nprofile = \"wpt-3g\"\nradio = \"3g\"\n";
    let e = p(&format!(
        "{base}[[variant]]\nname=\"h\"\nprotocol=\"http1\"\nproxy=\"http\"\n[[variant]]\nname=\"s\"\nprotocol=\"spdy\"\nproxy=\"spdy\"\n"
    ))
    .unwrap();
    assert_eq!(e.revisit_after, Some(Duration::from_secs(2)));
    assert_eq!(e.variants[1].proxy, Some(ProxyKind::Spdy));
    for (variant, want) in [
        ("protocol=\"http1\"\nproxy=\"spdy\"", "needs protocol"),
        ("protocol=\"spdy\"\nproxy=\"socks\"", "spdy or http"),
        ("protocol=\"spdy\"\nproxy=\"spdy\"\npush=\"all\"", "without"),
        ("protocol=\"http1\"\nproxy=\"http\"\ntls=true", "is plain"),
    ] {
        let err = p(&format!("{base}[[variant]]\nname=\"a\"\n{variant}\n")).unwrap_err();
        assert!(err.contains(want), "{variant}: {err}");
    }
    let c = parse(built_in("cellular").unwrap().toml, "c", Path::new(".")).unwrap();
    assert!(c.session_think.is_some() && c.variants.iter().all(|v| v.proxy.is_some()));
    assert!(
        c.networks
            .iter()
            .any(|n| n.desc.starts_with("trace tmobile-umts")),
        "the real 3G trace is one of the networks"
    );
}

#[test]
fn sessions_visit_every_page_once_in_one_fixed_order() {
    let base = "[pages]\nsynth = 5\n[[network]]\nprofile = \"wpt-3g\"\n[[variant]]\nname=\"h\"\nprotocol=\"http1\"\n";
    let e = p(&format!("session_think_ms = 1000\n{base}")).unwrap();
    assert_eq!(e.session_think, Some(Duration::from_secs(1)));
    let order = e.session_order(20);
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(sorted, (0..20).collect::<Vec<_>>(), "every page once");
    assert_ne!(order, sorted, "shuffled");
    assert_eq!(order, e.session_order(20), "fixed");
    let err = p(&format!(
        "session_think_ms = 1000\nrevisit_after_ms = 1000\n{base}"
    ))
    .unwrap_err();
    assert!(err.contains("choose one"), "{err}");
}

#[test]
fn takes_a_trace_pair_as_a_network() {
    let e = p("[pages]\nsynth = 1\n[[network]]\nname = \"u\"\nprofile = \"wpt-3g\"\ntrace = \"tmobile-umts\"\n[[variant]]\nname=\"h\"\nprotocol=\"http1\"\n").unwrap();
    let n = &e.networks[0];
    assert!(
        matches!(n.link.down.server, Server::Trace(_)),
        "{:?}",
        n.desc
    );
    assert!(
        n.desc
            .starts_with("trace tmobile-umts (2.02 Mbit/s down, 943 kbit/s up")
            && n.desc.contains("300 ms RTT"),
        "{}",
        n.desc
    );
    let err = p("[pages]\nsynth = 1\n[[network]]\ntrace = \"nope\"\n[[variant]]\nname=\"h\"\nprotocol=\"http1\"\n").unwrap_err();
    assert!(
        err.starts_with("x.toml:3:") && err.contains("verizon-lte"),
        "{err}"
    );
    let err = p("[pages]\nsynth = 1\n[[network]]\ntrace = \"verizon-lte\"\ndown = \"1mbit\"\n[[variant]]\nname=\"h\"\nprotocol=\"http1\"\n").unwrap_err();
    assert!(err.contains("drop down and up"), "{err}");
}

#[test]
fn expands_sweeps_and_picks_the_http1_baseline() {
    let e = p("[pages]\nsynth = 1\n[[sweep]]\nbase = \"whitepaper-cable\"\nrtt_ms = 100\nloss = [0.0, 0.01]\n[[variant]]\nname=\"h\"\nprotocol=\"http1\"\n[[variant]]\nname=\"s\"\nprotocol=\"spdy\"\n").unwrap();
    assert_eq!(e.networks.len(), 2);
    assert_eq!(e.networks[1].sweep.as_ref().unwrap().2, 0.01);
    assert!(
        e.networks[1].desc.contains("100 ms RTT") && e.networks[1].desc.contains("1% loss"),
        "{}",
        e.networks[1].desc
    );
    assert!(e.variants[0].baseline && !e.variants[1].baseline);
}

#[test]
fn a_variants_server_options_reach_the_servers_spec() {
    let base = "[pages]\nsynth = 1\n[[network]]\nprofile = \"whitepaper-dsl\"\n";
    let e = p(&format!(
        "{base}[[variant]]\nname=\"s\"\nprotocol=\"spdy\"\nnotsent_lowat = 16384\npush = \"all\"\n"
    ))
    .unwrap();
    let mut spec = speedy_server::spec::ServeSpec::default();
    e.variants[0].configure_serve(&mut spec);
    assert_eq!(spec.notsent_lowat, Some(16384));
    assert_eq!(spec.push, speedy_server::PushPolicy::All);
    let e = p(&format!(
        "{base}[[variant]]\nname=\"s\"\nprotocol=\"spdy\"\nnotsent_lowat = 0\n"
    ))
    .unwrap_err();
    assert!(e.contains("notsent_lowat = 0"), "{e}");
}

#[test]
fn sctp_and_h3_variants_share_an_experiment() {
    let base = "[pages]\nsynth = 1\n[[network]]\nprofile = \"whitepaper-dsl\"\n";
    let e = p(&format!(
        "{base}[[variant]]\nname=\"tcp\"\nprotocol=\"spdy\"\nbaseline = true\n\
         [[variant]]\nname=\"sctp\"\nprotocol=\"spdy\"\ntransport = \"sctp\"\n\
         [[variant]]\nname=\"h3\"\nprotocol=\"h3\"\n"
    ))
    .unwrap();
    let kinds: Vec<(bool, Protocol)> = e
        .variants
        .iter()
        .map(|v| (v.is_sctp(), v.protocol))
        .collect();
    assert_eq!(
        kinds,
        [
            (false, Protocol::Spdy(spdy::Version::V3_1)),
            (true, Protocol::Spdy(spdy::Version::V3_1)),
            (false, Protocol::H3)
        ]
    );
    // h3 over SCTP is still no variant.
    let e = p(&format!(
        "{base}[[variant]]\nname=\"x\"\nprotocol=\"h3\"\ntransport = \"sctp\"\n"
    ))
    .unwrap_err();
    assert!(
        e.contains("transport = \"sctp\": protocol = \"spdy\""),
        "{e}"
    );
}

#[test]
fn an_sctp_variant_names_its_stack_for_both_ends() {
    use speedy_net::sctp::SctpStack;
    let base = "[pages]\nsynth = 1\n[[network]]\nprofile = \"whitepaper-dsl\"\n\
                [[variant]]\nname=\"s\"\nprotocol=\"spdy\"\n";
    let e = p(&format!(
        "{base}transport = \"sctp\"\nsctp_stack = \"usrsctp\"\n"
    ))
    .unwrap();
    let mut load = speedy_browser::spec::LoadSpec::default();
    e.variants[0].configure_load(&mut load);
    assert_eq!(load.sctp_stack, SctpStack::Usrsctp);
    let mut serve = speedy_server::spec::ServeSpec::default();
    e.variants[0].configure_serve(&mut serve);
    assert_eq!(serve.sctp_stack, SctpStack::Usrsctp);
    // The default, sctp-proto, leaves the specs as they were.
    let e = p(&format!("{base}transport = \"sctp\"\n")).unwrap();
    let mut serve = speedy_server::spec::ServeSpec::default();
    e.variants[0].configure_serve(&mut serve);
    assert_eq!(serve.sctp_stack, SctpStack::SctpProto);
    for (extra, want) in [
        (
            "sctp_stack = \"usrsctp\"",
            "sctp_stack: only with transport = \"sctp\"",
        ),
        (
            "transport = \"sctp\"\nsctp_stack = \"linux\"",
            "sctp_stack = \"linux\": \"linux\": an SCTP stack, sctp-proto or usrsctp",
        ),
        (
            "transport = \"sctp\"\nsctp_stack = \"usrsctp\"\ncookie_bundling = false",
            "cookie_bundling = false: sctp-proto only",
        ),
    ] {
        let e = p(&format!("{base}{extra}\n")).unwrap_err();
        assert!(e.contains(want), "{extra}: {e}");
    }
}

#[test]
fn an_h3_variant_asks_quinn_for_its_congestion_control() {
    use speedy_net::h3::QuicCcAlgorithm as Q;
    let e = p(
        "[pages]\nsynth = 1\n[[network]]\nprofile = \"whitepaper-dsl\"\n\
               [[variant]]\nname = \"h1\"\nprotocol = \"http1\"\ncc = \"bbr\"\n\
               [[variant]]\nname = \"q\"\nprotocol = \"h3\"\n\
               [[variant]]\nname = \"qb\"\nprotocol = \"h3\"\ncc = [\"bbr\", \"cubic\"]\n\
               [[variant]]\nname = \"qr\"\nprotocol = \"h3\"\ncc = \"reno\"\n",
    )
    .unwrap();
    let got: Vec<Option<Q>> = e.variants.iter().map(|v| v.quic_cc()).collect();
    assert_eq!(got, [None, Some(Q::Cubic), Some(Q::Bbr), Some(Q::NewReno)]);
    // ... and the replay server is told so.
    let mut spec = speedy_server::spec::ServeSpec::default();
    e.variants[2].configure_serve(&mut spec);
    assert_eq!(spec.quic_cc, Some(Q::Bbr));
    // quinn's default is left unsaid (the server's key stays the TCP variants').
    let mut spec = speedy_server::spec::ServeSpec::default();
    e.variants[1].configure_serve(&mut spec);
    assert_eq!(spec.quic_cc, None);
}

#[test]
fn a_chromium_variant_is_refused_what_chromium_cannot_honour() {
    let base = "[pages]\nsynth = 1\n[[network]]\nprofile = \"whitepaper-dsl\"\n";
    let ok = |variant: &str| p(&format!("{base}[[variant]]\nname=\"c\"\n{variant}\n"));
    let e = ok("protocol=\"h2\"\ntls=true\nclient=\"chromium\"").unwrap();
    assert_eq!(e.variants[0].client, Client::Chromium);
    // h3 implies TLS; server-side and namespace knobs apply to Chromium's loads too.
    let e = ok("protocol=\"h3\"\nclient=\"chromium\"\ninitcwnd=3\ncc=\"cubic\"").unwrap();
    assert_eq!(e.variants[0].client, Client::Chromium);
    let e = ok("protocol=\"http1\"\ntls=true\nclient=\"chromium\"\nrto_min_ms=200").unwrap();
    assert_eq!(e.variants[0].client, Client::Chromium);
    // The default is the loader.
    let e = ok("protocol=\"h2\"").unwrap();
    assert_eq!(e.variants[0].client, Client::Loader);
    for (variant, want) in [
        (
            "protocol=\"spdy\"\ntls=true",
            "removed SPDY in version 51, 2016",
        ),
        ("protocol=\"h2\"", "needs tls = true"),
        ("protocol=\"http1\"\ntls=false", "needs tls = true"),
        ("protocol=\"h2\"\ntls=true\ntransport=\"sctp\"", "SCTP"),
        ("protocol=\"http1\"\ntls=true\nproxy=\"http\"", "proxy"),
        (
            "protocol=\"h2\"\ntls=true\nsessions=4",
            "cannot honour sessions",
        ),
        (
            "protocol=\"h2\"\ntls=true\ntls_hello=\"plain\"",
            "cannot honour tls_hello",
        ),
        (
            "protocol=\"h2\"\ntls=true\nknown_servers=true",
            "known_servers",
        ),
        ("protocol=\"h2\"\ntls=true\npartition=false", "partition"),
        (
            "protocol=\"h2\"\ntls=true\npush=\"all\"",
            "cannot honour push",
        ),
        ("protocol=\"h2\"\ntls=true\nprefetch=true", "prefetch"),
        (
            "protocol=\"http1\"\ntls=true\nconnections_per_host=2",
            "connections_per_host",
        ),
    ] {
        let err = ok(&format!("{variant}\nclient=\"chromium\"")).unwrap_err();
        assert!(
            err.starts_with("x.toml:5:") && err.contains("variant \"c\"") && err.contains(want),
            "{variant}: {err}"
        );
    }
    let err = ok("protocol=\"h2\"\ntls=true\nclient=\"firefox\"").unwrap_err();
    assert!(err.contains("loader or chromium"), "{err}");
    // A revisit or a browsing session is the loader's: refused, naming the variant.
    for key in ["revisit_after_ms", "session_think_ms"] {
        let err = p(&format!(
            "{key} = 1000\n{base}[[variant]]\nname=\"l\"\nprotocol=\"h2\"\ntls=true\n\
             [[variant]]\nname=\"c\"\nprotocol=\"h2\"\ntls=true\nclient=\"chromium\"\n"
        ))
        .unwrap_err();
        assert!(err.contains("variant \"c\"") && err.contains(key), "{err}");
    }
}
