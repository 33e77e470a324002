//! Subcommands of the `speedy` program, one module each.
use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub mod link;

/// speedy: a SPDY toolkit and web-latency lab.
#[derive(Parser, Debug)]
#[command(name = "speedy", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a command behind an emulated network link (rate, delay, loss, queue, radio).
    Link(link::LinkArgs),
}

impl Cli {
    /// Runs the chosen subcommand and returns the process exit code.
    pub fn run(self) -> ExitCode {
        match self.command {
            Command::Link(a) => link::run(a),
        }
    }
}
