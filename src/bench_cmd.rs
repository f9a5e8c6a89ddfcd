//! `overcast bench` (being built).

/// Arguments of `overcast bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {}

/// Runs the benchmark; returns the exit code.
pub fn run(_args: &BenchArgs) -> u8 {
    eprintln!("overcast bench: not built yet");
    2
}
