//! `overcast`: the command-line front of the harness (run, sweep, replay,
//! bugs, check).

mod check_cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Deterministic simulation testing of a cloud storage and document service model.
#[derive(Parser, Debug)]
#[command(name = "overcast", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check recorded histories (kvhist/1 or overcast's own) for linearizability.
    Check(check_cmd::CheckArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help and version to stdout with exit 0; usage errors get exit 2.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let code = match cli.command {
        Command::Check(args) => check_cmd::run(&args),
    };
    ExitCode::from(code)
}
