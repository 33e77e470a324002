//! `speedy completions` and `speedy man`: shell completions and man pages generated from
//! the same argument definitions as the program, so they cannot drift from it.

use anyhow::{Context, Result};
use clap::{Args, CommandFactory, ValueEnum};
use std::path::PathBuf;

/// Arguments of `speedy completions`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
speedy completions bash > /etc/bash_completion.d/speedy\n  \
speedy completions zsh > \"${fpath[1]}/_speedy\"\n  \
speedy completions fish > ~/.config/fish/completions/speedy.fish")]
pub struct CompletionsArgs {
    /// The shell to write a completion script for (on stdout).
    #[arg(value_enum)]
    shell: Shell,
}

/// Shells with completion scripts.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Arguments of `speedy man`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
speedy man | man -l -\n  \
speedy man --out-dir /usr/local/share/man/man1")]
pub struct ManArgs {
    /// Write speedy.1 and one page per subcommand (speedy-serve.1, …) into this
    /// directory instead of printing speedy.1 on stdout.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
}

/// Writes the completion script.
pub fn completions(a: CompletionsArgs) -> Result<()> {
    let mut cmd = super::Cli::command();
    let shell = match a.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut cmd, "speedy", &mut std::io::stdout());
    Ok(())
}

/// Writes the man page(s).
pub fn man(a: ManArgs) -> Result<()> {
    let cmd = super::Cli::command();
    match a.out_dir {
        Some(dir) => {
            super::serve::not_a_file("--out-dir", &dir)?;
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("--out-dir {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("writing man pages into {}", dir.display()))?;
            eprintln!("speedy man: pages written to {}", dir.display());
        }
        None => clap_mangen::Man::new(cmd)
            .render(&mut std::io::stdout())
            .context("writing the man page")?,
    }
    Ok(())
}
