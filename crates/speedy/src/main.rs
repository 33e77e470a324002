//! `speedy`: the command-line program.
mod cmd;
use clap::Parser;

fn main() -> std::process::ExitCode {
    cmd::Cli::parse().run()
}
