//! `overcast`: the command-line front of the harness (run, sweep, replay,
//! bugs, check, bench).

mod bench_cmd;
mod check_cmd;
mod run_cmd;
mod script_cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// The allocator: mimalloc. A run allocates and frees small objects per
/// datagram, and glibc's malloc was a fifth of a run's time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Deterministic simulation testing of a cloud storage and document service model.
#[derive(Parser, Debug)]
#[command(name = "overcast", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one scenario for one seed; exit 1 if a check fails.
    Run(run_cmd::RunArgs),
    /// Run scenarios over a range of seeds on all cores; failures are saved for replay.
    Sweep(run_cmd::SweepArgs),
    /// Join the results of sharded sweeps (`sweep --out`) into one summary and failure list.
    Merge(run_cmd::MergeArgs),
    /// Replay a saved scenario (a failure file or a scenario file) exactly.
    Replay(run_cmd::ReplayArgs),
    /// Shrink a failing scenario to the smallest one that still fails the same way.
    Shrink(run_cmd::ShrinkArgs),
    /// Hunt every seeded bug: sweep seeds until each is caught, and report.
    Bugs(run_cmd::BugsArgs),
    /// Check recorded histories (kvhist/1 or overcast's own) for linearizability.
    Check(check_cmd::CheckArgs),
    /// Measure seeds per second of a scenario beside a bare-madsim run of the same message count.
    Bench(bench_cmd::BenchArgs),
    /// Run conformance scripts (JSON requests and expected answers) on fresh deployments.
    Script(script_cmd::ScriptArgs),
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
        Command::Run(args) => run_cmd::run(&args),
        Command::Sweep(args) => run_cmd::sweep(&args),
        Command::Merge(args) => run_cmd::merge(&args),
        Command::Replay(args) => run_cmd::replay(&args),
        Command::Shrink(args) => run_cmd::shrink(&args),
        Command::Bugs(args) => run_cmd::bugs(&args),
        Command::Check(args) => check_cmd::run(&args),
        Command::Bench(args) => bench_cmd::run(&args),
        Command::Script(args) => script_cmd::run(&args),
    };
    ExitCode::from(code)
}
