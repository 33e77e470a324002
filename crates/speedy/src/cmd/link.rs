//! `speedy link`: owned by the link-emulator work (issue 4).
use clap::Args;
use std::process::ExitCode;

/// Arguments of `speedy link`.
#[derive(Args, Debug)]
pub struct LinkArgs {}

/// Runs `speedy link`.
pub fn run(_a: LinkArgs) -> ExitCode {
    eprintln!("speedy link: not built yet");
    ExitCode::from(2)
}
