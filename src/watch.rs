//! The wall-clock watch over a command's runs: the budget each run has
//! (`--max-wall`), which a run that goes over ends with one line and exit
//! code [`OUT_OF_TIME`], and the progress shown while a long run or shrink
//! goes on (a spinner on stderr when it is a terminal, else a line every
//! [`PROGRESS_EVERY`]). A run is one world run of a scenario with its
//! checks: `run` and `replay` do one, a sweep one per seed, a shrink one
//! per candidate. Wall time decides nothing in a run itself: the watch only
//! stops the program.

use overcast_harness::bug::BugInfo;
use overcast_harness::error::HarnessError;
use overcast_harness::params::SizeLimit;
use overcast_harness::registry::{CheckRecord, DynScenario, Executed, RunDefaults, RunHistory};
use overcast_harness::scenario::Scenario;
use overcast_sim::check::{Property, PropertyId};
use overcast_sim::timeline::Timeline;
use overcast_sim::world::{Topology, WorldOutcome};
use proptest::strategy::BoxedStrategy;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The exit code of a command stopped because a run went over `--max-wall`.
pub const OUT_OF_TIME: u8 = 6;

/// How often progress is printed when stderr is not a terminal (and how
/// long a command runs before the first such line).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// `--max-wall`: the longest one run may take (`off`: no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxWall(pub Option<Duration>);

impl std::str::FromStr for MaxWall {
    type Err = String;
    fn from_str(text: &str) -> Result<MaxWall, String> {
        if text == "off" {
            return Ok(MaxWall(None));
        }
        match humantime::parse_duration(text) {
            Ok(d) if !d.is_zero() => Ok(MaxWall(Some(d))),
            _ => Err(format!(
                "--max-wall takes a duration such as 30s, 10m or 1h, or `off` (got '{text}')"
            )),
        }
    }
}

impl std::fmt::Display for MaxWall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(d) => write!(f, "{}", humantime::format_duration(d)),
            None => f.write_str("off"),
        }
    }
}

/// A run under way.
struct Running {
    /// What it is, in words: "occ seed 3".
    what: String,
    /// The command that reruns it alone.
    rerun: String,
    /// When it started.
    started: Instant,
}

/// The runs under way, by a number given at their start.
fn running() -> &'static Mutex<BTreeMap<u64, Running>> {
    static RUNNING: OnceLock<Mutex<BTreeMap<u64, Running>>> = OnceLock::new();
    RUNNING.get_or_init(Default::default)
}

/// Runs started so far.
static STARTED: AtomicU64 = AtomicU64::new(0);

/// Unregisters a run when it ends (or panics).
struct RunGuard(u64);

impl Drop for RunGuard {
    fn drop(&mut self) {
        running()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0);
    }
}

/// The run that has gone on longest, and for how long.
fn longest() -> Option<(String, String, Duration)> {
    let runs = running().lock().unwrap_or_else(|e| e.into_inner());
    runs.values()
        .min_by_key(|r| r.started)
        .map(|r| (r.what.clone(), r.rerun.clone(), r.started.elapsed()))
}

/// "occ seed 3 (swarm, bugs on: x)".
fn run_words(s: &Scenario) -> String {
    let mut w = format!("{} seed {}", s.name, s.seed);
    let mut extra = Vec::new();
    if s.swarm {
        extra.push("swarm".to_string());
    }
    if !s.bugs.is_empty() {
        extra.push(format!("bugs on: {}", s.bugs.join(", ")));
    }
    if !extra.is_empty() {
        w += &format!(" ({})", extra.join(", "));
    }
    w
}

/// What the watch does with a run that goes over the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Over {
    /// Say so and stop.
    Stop,
    /// Say so, with the command that reruns the run alone (a sweep's seed), and stop.
    StopWithRerun,
}

/// What the watch shows while the command goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Nothing (a sweep draws its own bar).
    Off,
    /// The command's own words, e.g. "replaying occ seed 3" or "shrinking".
    Show(String),
}

/// Starts the watch for the rest of the command: a thread that stops the
/// program when a run goes over `budget`, and shows `progress`.
pub fn start(budget: MaxWall, over: Over, progress: Progress) {
    let began = Instant::now();
    let spinner = match &progress {
        Progress::Show(_) if std::io::stderr().is_terminal() => {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            let _ = SPINNER.set(bar.clone());
            Some(bar)
        }
        _ => None,
    };
    let spawned = std::thread::Builder::new()
        .name("overcast-watch".into())
        .spawn(move || {
            let mut next_line = PROGRESS_EVERY;
            // Often enough to stop a run soon after its budget (a short
            // budget is looked at more often), rarely enough to cost nothing.
            let every = budget.0.map_or(Duration::from_millis(200), |b| {
                (b / 4).clamp(Duration::from_millis(1), Duration::from_millis(200))
            });
            loop {
                std::thread::sleep(every);
                let oldest = longest();
                if let (Some(limit), Some((what, rerun, took))) = (budget.0, &oldest) {
                    if *took > limit {
                        if let Some(bar) = &spinner {
                            bar.finish_and_clear();
                        }
                        let tail = match over {
                            Over::Stop => String::new(),
                            Over::StopWithRerun => format!("; `{rerun}` runs it alone"),
                        };
                        eprintln!(
                            "overcast: the run of {what} went on for more than --max-wall {budget}: stopped{tail}"
                        );
                        std::process::exit(i32::from(OUT_OF_TIME));
                    }
                }
                let Progress::Show(label) = &progress else {
                    continue;
                };
                let runs = STARTED.load(Ordering::Relaxed);
                let words = match &oldest {
                    Some((what, _, took)) if runs <= 1 => {
                        format!("{label}: {what}, {} s", took.as_secs())
                    }
                    _ => format!(
                        "{label}: {runs} run{}, {} s",
                        if runs == 1 { "" } else { "s" },
                        began.elapsed().as_secs()
                    ),
                };
                match &spinner {
                    Some(bar) => {
                        bar.set_message(words);
                        bar.tick();
                    }
                    None if began.elapsed() >= next_line => {
                        eprintln!("overcast: still {words}");
                        next_line += PROGRESS_EVERY;
                    }
                    None => {}
                }
            }
        });
    if let Err(e) = spawned {
        eprintln!("overcast: the wall-clock watch could not start: {e}");
    }
}

/// The spinner, when one is drawn.
static SPINNER: OnceLock<indicatif::ProgressBar> = OnceLock::new();

/// Prints a line on stdout without tearing the spinner.
pub fn say(line: &str) {
    match SPINNER.get() {
        Some(bar) => bar.suspend(|| println!("{line}")),
        None => println!("{line}"),
    }
}

/// Clears the spinner for good, before the command prints its last lines.
pub fn finish() {
    if let Some(bar) = SPINNER.get() {
        bar.finish_and_clear();
    }
}

/// A scenario whose runs the watch times: each [`DynScenario::execute`] is
/// registered while it goes on; everything else is the scenario's own.
struct Watched {
    inner: &'static dyn DynScenario,
}

/// `def`, its runs timed by the watch (one wrapper per scenario name, made once).
pub fn watched(def: &'static dyn DynScenario) -> &'static dyn DynScenario {
    static MADE: OnceLock<Mutex<Vec<&'static Watched>>> = OnceLock::new();
    let mut made = MADE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    // By name: the catalogue's scenarios are mostly unit structs, which
    // may share one address.
    if let Some(w) = made.iter().find(|w| w.inner.name() == def.name()) {
        return *w;
    }
    let w: &'static Watched = Box::leak(Box::new(Watched { inner: def }));
    made.push(w);
    w
}

impl DynScenario for Watched {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn describe(&self) -> &'static str {
        self.inner.describe()
    }
    fn default_params(&self, seed: u64) -> serde_json::Value {
        self.inner.default_params(seed)
    }
    fn defaults(&self) -> RunDefaults {
        self.inner.defaults()
    }
    fn check_params(&self, params: &serde_json::Value) -> Result<(), HarnessError> {
        self.inner.check_params(params)
    }
    fn header(&self, params: &serde_json::Value) -> String {
        self.inner.header(params)
    }
    fn topology(&self, params: &serde_json::Value) -> Result<Topology, HarnessError> {
        self.inner.topology(params)
    }
    fn budget(&self) -> overcast_sim::faults::FaultBudget {
        self.inner.budget()
    }
    fn bugs(&self) -> Vec<&'static BugInfo> {
        self.inner.bugs()
    }
    fn hunt_profile(&self, bug: &str) -> &'static str {
        self.inner.hunt_profile(bug)
    }
    fn variant(&self, params: &serde_json::Value) -> Option<&'static str> {
        self.inner.variant(params)
    }
    fn execute(&self, s: &Scenario) -> Result<Executed, HarnessError> {
        let id = STARTED.fetch_add(1, Ordering::Relaxed);
        running().lock().unwrap_or_else(|e| e.into_inner()).insert(
            id,
            Running {
                what: run_words(s),
                rerun: overcast_harness::saved::run_command(self.inner, s),
                started: Instant::now(),
            },
        );
        let _guard = RunGuard(id);
        self.inner.execute(s)
    }
    fn reduction_names(&self) -> Vec<&'static str> {
        self.inner.reduction_names()
    }
    fn prefix_closed(&self, property: PropertyId) -> bool {
        self.inner.prefix_closed(property)
    }
    fn judges_its_premise(&self, property: PropertyId) -> bool {
        self.inner.judges_its_premise(property)
    }
    fn reduce(&self, params: &serde_json::Value, r: usize, i: usize) -> Option<serde_json::Value> {
        self.inner.reduce(params, r, i)
    }
    fn strategy(&'static self) -> BoxedStrategy<Scenario> {
        self.inner.strategy()
    }
    fn limits(&self) -> &'static [SizeLimit] {
        self.inner.limits()
    }
    fn properties(&self) -> Vec<Property> {
        self.inner.properties()
    }
    fn read_history(&self, doc: serde_json::Value) -> Result<Box<dyn RunHistory>, HarnessError> {
        self.inner.read_history(doc)
    }
    fn check_history(
        &self,
        history: &dyn RunHistory,
        params: &serde_json::Value,
    ) -> Result<Vec<CheckRecord>, HarnessError> {
        self.inner.check_history(history, params)
    }
    fn draw(
        &self,
        s: &Scenario,
        history: &dyn RunHistory,
        world: &WorldOutcome,
        t: &mut Timeline,
    ) -> Result<(), HarnessError> {
        self.inner.draw(s, history, world, t)
    }
    fn goals(
        &self,
        params: &serde_json::Value,
    ) -> Result<Vec<overcast_harness::goals::DynGoal>, HarnessError> {
        self.inner.goals(params)
    }
    fn coverage_tables(&self) -> Option<overcast_harness::coverage::Tables> {
        self.inner.coverage_tables()
    }
    fn coverage_of(
        &self,
        history: &dyn RunHistory,
    ) -> Option<overcast_harness::coverage::Coverage> {
        self.inner.coverage_of(history)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_wall_reads_durations_and_off() {
        assert_eq!("30s".parse(), Ok(MaxWall(Some(Duration::from_secs(30)))));
        assert_eq!("10m".parse(), Ok(MaxWall(Some(Duration::from_secs(600)))));
        assert_eq!("off".parse(), Ok(MaxWall(None)));
        assert!("0s".parse::<MaxWall>().is_err());
        assert!("soon".parse::<MaxWall>().is_err());
        assert_eq!(MaxWall(Some(Duration::from_secs(600))).to_string(), "10m");
    }

    #[test]
    fn a_watched_scenario_is_the_scenario_and_is_made_once() {
        for def in overcast_scenarios::CATALOGUE.scenarios {
            let w = watched(*def);
            assert!(std::ptr::addr_eq(w, watched(*def)));
            assert_eq!(w.name(), def.name());
            assert_eq!(w.default_params(3), def.default_params(3));
            assert_eq!(w.bugs().len(), def.bugs().len());
        }
    }
}
