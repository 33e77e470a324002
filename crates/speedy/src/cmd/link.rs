//! `speedy link`: a thin shim over [`linkem::cli`] (issue 4).
use std::process::ExitCode;

/// Arguments of `speedy link` (defined in [`linkem::cli`]).
pub type LinkArgs = linkem::cli::LinkArgs;

/// Runs `speedy link`.
pub fn run(a: LinkArgs) -> ExitCode {
    ExitCode::from(linkem::cli::run(a).clamp(0, 255) as u8)
}
