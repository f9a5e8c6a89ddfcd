//! `overcast check`: linearizability verdicts for recorded history files (being built).

/// Arguments of `overcast check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// History files (kvhist/1 or overcast history JSON).
    pub files: Vec<std::path::PathBuf>,
}

/// Runs the command; returns the process exit code.
pub fn run(_args: &CheckArgs) -> u8 {
    eprintln!("overcast check: not built yet");
    2
}
