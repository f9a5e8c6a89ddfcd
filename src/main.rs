//! `overcast`: the command-line front of the harness (run, sweep, explore,
//! replay, shrink, bugs, check, bench, script, list).

#![deny(missing_docs)]

mod bench_cmd;
mod check_cmd;
mod explore_cmd;
mod header;
mod invocation;
mod list_cmd;
mod run_cmd;
mod script_cmd;
mod watch;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// The allocator: mimalloc. A run allocates and frees small objects per
/// datagram, and glibc's malloc was a fifth of a run's time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its place in `mi_option_t` of
/// mimalloc 3, which libmimalloc-sys names no constant for).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How the CLI's runs get memory. Each seed runs on a fresh thread, so its
/// memory comes from pages earlier runs gave back:
/// - mimalloc keeps them for ten minutes, not one second: purged once a
///   second, they were faulted in again;
/// - no transparent huge pages (the kernel's `always` would otherwise
///   apply): a fresh thread's heap starts in arena memory no run touched
///   yet, and each first touch zeroed 2 MiB where the run needed a few KiB.
///
/// Together they took a twentieth to a tenth of a sweep's time. `bench
/// --soak` still reads what the runs hold: its `mi_collect(true)` purges
/// regardless of the delay.
fn keep_freed_pages() {
    // SAFETY: sets one allocator option to a value in its range.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 600_000) };
    #[cfg(target_os = "linux")]
    {
        extern "C" {
            fn prctl(option: std::ffi::c_int, ...) -> std::ffi::c_int;
        }
        const PR_SET_THP_DISABLE: std::ffi::c_int = 41;
        let (on, unused): (std::ffi::c_ulong, std::ffi::c_ulong) = (1, 0);
        // SAFETY: sets this process's THP flag; on a kernel without it the
        // call fails (-1) and memory is only slower to fault in.
        unsafe { prctl(PR_SET_THP_DISABLE, on, unused, unused, unused) };
    }
}

/// Deterministic simulation testing of a cloud storage and document service model.
#[derive(Parser, Debug)]
#[command(
    name = "overcast",
    version,
    about,
    after_help = "Start with `overcast list` (the scenarios), then `overcast run occ --seed 1`.\n\
                  `overcast COMMAND --help` gives each command's options and an example."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one scenario for one seed; exit 1 if a check fails.
    #[command(after_help = "Example:\n  overcast run occ --seed 0 --bug skip_if_match")]
    Run(run_cmd::RunArgs),
    /// Run scenarios over a range of seeds on all cores; failures are saved for replay.
    #[command(after_help = "Example:\n  overcast sweep leases --seeds 0..200 --swarm")]
    Sweep(run_cmd::SweepArgs),
    /// Run a scenario's seeds and branch them from the states where something
    /// rare first happened (a goal first or rarely reached); failures are saved for replay.
    #[command(
        after_help = "Example:\n  overcast explore regions --for 2m --bug stale_term_append"
    )]
    Explore(explore_cmd::ExploreArgs),
    /// Join the results of sharded sweeps and explorations (`--out` folders) into one summary and failure list, and mark failures new, ongoing or resolved against an earlier one.
    #[command(after_help = "Example:\n  overcast merge shard-1 shard-2")]
    Merge(run_cmd::MergeArgs),
    /// Replay a saved scenario (a failure file or a scenario file) exactly.
    #[command(
        after_help = "Example:\n  overcast replay target/overcast/failures/occ-seed0-skip_if_match.json"
    )]
    Replay(run_cmd::ReplayArgs),
    /// Shrink a failing scenario to the smallest one that still fails the same way.
    #[command(
        after_help = "Example:\n  overcast shrink target/overcast/failures/occ-seed0-skip_if_match.json"
    )]
    Shrink(run_cmd::ShrinkArgs),
    /// Hunt seeded bugs: sweep seeds until each is caught, and report (minutes
    /// for all of them; `overcast list bugs` only lists them).
    #[command(after_help = "Example:\n  overcast bugs --bug skip_if_match --no-shrink")]
    Bugs(run_cmd::BugsArgs),
    /// Check recorded histories: kvhist/1 files for linearizability, overcast's
    /// own with the checkers of the scenario that recorded them.
    #[command(
        after_help = "Example:\n  overcast check target/overcast/failures/occ-seed0-skip_if_match.history.json"
    )]
    Check(check_cmd::CheckArgs),
    /// Measure seeds per second of a scenario beside a bare-madsim run of the same message count.
    #[command(after_help = "Example:\n  overcast bench occ --seeds 100 --rounds 3")]
    Bench(bench_cmd::BenchArgs),
    /// Run conformance scripts (JSON requests and expected answers) on fresh deployments.
    #[command(
        after_help = "Example:\n  overcast script scenarios/scripts/blob_order_of_checks.json"
    )]
    Script(script_cmd::ScriptArgs),
    /// List the scenarios (what each models and checks), the seeded bugs, or the properties.
    #[command(
        after_help = "Examples:\n  overcast list\n  overcast list bugs occ\n  overcast list properties"
    )]
    List(list_cmd::ListArgs),
}

/// Writing to a closed pipe ends the program quietly, as other command-line
/// tools do (`overcast list | head`), instead of a panic on the next print.
fn end_quietly_on_closed_pipe() {
    #[cfg(unix)]
    {
        extern "C" {
            fn signal(signum: std::ffi::c_int, handler: usize) -> usize;
        }
        const SIGPIPE: std::ffi::c_int = 13;
        const SIG_DFL: usize = 0;
        // SAFETY: restores the default action of one signal, before any
        // other thread exists.
        unsafe { signal(SIGPIPE, SIG_DFL) };
    }
}

fn main() -> ExitCode {
    keep_freed_pages();
    end_quietly_on_closed_pipe();
    overcast_harness::saved::set_invocation(invocation::detect(&invocation::Started::now()));
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
        Command::Explore(args) => explore_cmd::run(&args),
        Command::Merge(args) => run_cmd::merge(&args),
        Command::Replay(args) => run_cmd::replay(&args),
        Command::Shrink(args) => run_cmd::shrink(&args),
        Command::Bugs(args) => run_cmd::bugs(&args),
        Command::Check(args) => check_cmd::run(&args),
        Command::Bench(args) => bench_cmd::run(&args),
        Command::Script(args) => script_cmd::run(&args),
        Command::List(args) => list_cmd::run(&args),
    };
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_option_set_is_the_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // mimalloc 3's purge delay defaults to 1000 ms; no neighbour does.
        // SAFETY: reads one allocator option.
        let delay = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(delay, 1000);
    }
}
