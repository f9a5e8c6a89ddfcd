//! Logging for a single run: a tracing-subscriber `fmt` layer on stderr whose
//! timestamps are simulated time (madsim wraps each task poll in a
//! `node{id,name}` span, so lines also show the node).

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::EnvFilter;

/// Prints the simulated time since the start of the run, or `-` outside one.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimTime;

impl FormatTime for SimTime {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        match madsim::time::TimeHandle::try_current() {
            Some(t) => {
                let d = t.elapsed();
                write!(w, "{:>6}.{:06}s", d.as_secs(), d.subsec_micros())
            }
            None => write!(w, "{:>14}", "-"),
        }
    }
}

/// Installs the logger. `filter` is an `EnvFilter` directive such as `info`
/// or `overcast_model=debug`; madsim's own lines are kept at `warn`.
pub fn init(filter: &str) -> Result<(), String> {
    let filter = EnvFilter::try_new(format!("madsim=warn,{filter}"))
        .map_err(|e| format!("bad log filter '{filter}': {e}"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(SimTime)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init()
        .map_err(|e| format!("cannot install the logger: {e}"))
}
