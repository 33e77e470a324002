//! Shell completions and man pages (issue 18), from the real program: generated from the
//! same definitions as the parser, so every subcommand and option the program takes is in
//! them; the bash script parses; `man` renders the pages.

mod support;
use std::process::Command;
use support::*;

/// The subcommands `speedy --help` lists (the source of truth the generated files follow).
fn subcommands() -> Vec<String> {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let list: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(list.len() >= 10, "{text}");
    list
}

fn run(args: &[&str]) -> String {
    let o = Command::new(BIN).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn completions_name_every_subcommand_and_bash_parses_them() {
    let subs = subcommands();
    for shell in ["bash", "zsh", "fish"] {
        let script = run(&["completions", shell]);
        for s in &subs {
            assert!(script.contains(s.as_str()), "{shell}: no {s}");
        }
        // Options of a subcommand, long and short.
        assert!(script.contains("max-time"), "{shell}");
        assert!(script.contains("cacert"), "{shell}");
    }
    let dir = TempDir::new("completions");
    let path = dir.join("speedy.bash");
    std::fs::write(&path, run(&["completions", "bash"])).unwrap();
    let o = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Completing `speedy fe` in bash offers fetch.
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(speedy fe); COMP_CWORD=1; _speedy speedy fe speedy; echo \"${{COMPREPLY[@]}}\"",
            path.display()
        ))
        .output()
        .unwrap();
    let offered = String::from_utf8_lossy(&o.stdout);
    assert!(
        offered.split_whitespace().any(|w| w == "fetch"),
        "{offered} {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A shell it does not know is named.
    let o = Command::new(BIN)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("tcsh"));
}

#[test]
fn man_pages_cover_every_subcommand_with_their_help_texts() {
    let top = run(&["man"]);
    assert!(top.contains(".TH speedy 1"), "{top}");
    let dir = TempDir::new("man");
    let out = dir.join("man1");
    run(&["man", "--out-dir", out.to_str().unwrap()]);
    for s in subcommands() {
        let page = std::fs::read_to_string(out.join(format!("speedy-{s}.1")))
            .unwrap_or_else(|e| panic!("speedy-{s}.1: {e}"));
        assert!(page.contains(&format!(".TH speedy-{s} 1")), "{s}");
    }
    // The help's own texts: fetch's exit statuses and an option's explanation.
    let fetch = std::fs::read_to_string(out.join("speedy-fetch.1")).unwrap();
    assert!(fetch.contains("Exit status"), "{fetch}");
    assert!(fetch.contains("max\\-time"), "{fetch}");
}
