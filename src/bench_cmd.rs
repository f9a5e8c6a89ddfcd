//! `overcast bench`: seeds per second of a scenario on all cores, beside a
//! bare-madsim run that sends the same number of messages per seed, so the
//! harness's overhead over the simulator is visible. Medians over rounds;
//! within a round the two sides run seed by seed, interleaved.

use overcast_harness::run::run_with;
use overcast_harness::scenario::Scenario;
use overcast_scenarios::CATALOGUE;
use overcast_sim::floor::ping_pong;
use overcast_sim::runner::{run_isolated, sweep, SweepOptions};
use std::time::Instant;

/// Arguments of `overcast bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// The scenario to measure.
    #[arg(default_value = "occ")]
    pub scenario: String,
    /// Seeds per round.
    #[arg(long, default_value_t = 200)]
    pub seeds: u64,
    /// Rounds (the figures are medians over rounds).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Worker threads (default: all cores; for `--soak`, one).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Soak instead: run every registered scenario's seeds, one job at a time
    /// unless `--jobs` says more, and report resident memory and seeds per
    /// second after 1,000 seeds and at each tenth of `--soak-seeds`, so a
    /// leak or a slowdown shows.
    #[arg(long)]
    pub soak: bool,
    /// Seeds per scenario of the soak.
    #[arg(long, default_value_t = 100_000)]
    pub soak_seeds: u64,
}

/// Resident memory of this process, KiB (Linux; 0 where unknown): all of
/// it, the anonymous part (heap, stacks: what the runs hold) and the
/// file-backed part (the program's own pages, which grow as rarer code
/// paths run for the first time, up to the size of the binary).
#[derive(Clone, Copy, Default)]
struct Resident {
    total: u64,
    anon: u64,
    file: u64,
}

fn resident() -> Resident {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    };
    Resident {
        total: field("VmRSS:"),
        anon: field("RssAnon:"),
        file: field("RssFile:"),
    }
}

/// Bytes mimalloc (the global allocator) has committed, by its own
/// estimate. It hands freed pages back to the system after a short delay,
/// so resident memory and this follow what the runs hold; a leak shows as
/// steady growth of both.
fn heap_committed() -> u64 {
    let (mut elapsed, mut user, mut system) = (0, 0, 0);
    let (mut rss, mut peak_rss, mut commit, mut peak_commit, mut faults) = (0, 0, 0, 0, 0);
    // SAFETY: mi_process_info only writes the counters it is handed.
    unsafe {
        libmimalloc_sys::mi_process_info(
            &mut elapsed,
            &mut user,
            &mut system,
            &mut rss,
            &mut peak_rss,
            &mut commit,
            &mut peak_commit,
            &mut faults,
        );
    }
    commit as u64
}

/// One soak checkpoint's figures.
struct SoakPoint {
    seeds: u64,
    resident: Resident,
    /// The median, least and most resident memory (KiB) over the readings
    /// after each of the last [`SOAK_WINDOW`] seeds.
    window: (u64, u64, u64),
    heap: u64,
}

/// Seeds whose resident-memory readings make a checkpoint's median. What a
/// process holds after one seed depends on that seed's runs (which
/// allocator pages their longer-lived blocks pinned), so one reading moves
/// by a few MiB from seed to seed; the median over a window shows the level
/// a leak would raise.
const SOAK_WINDOW: usize = 1_000;

/// Resident memory now, after the allocator has handed its free pages back.
fn resident_collected() -> Resident {
    // SAFETY: mi_collect only releases the allocator's free pages.
    unsafe { libmimalloc_sys::mi_collect(true) };
    resident()
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// `overcast bench --soak`: seeds of every scenario in turn, `jobs` seeds at
/// a time, with memory and speed checkpoints after 1,000 seeds and at each
/// tenth. A reading is taken after each group of `jobs` seeds.
fn soak(seeds: u64, jobs: usize) -> u8 {
    if seeds < 1_000 {
        eprintln!("overcast: --soak-seeds must be at least 1000");
        return 2;
    }
    let jobs = jobs.max(1);
    println!(
        "overcast bench --soak: {seeds} seeds of each of {} scenarios, {jobs} job{}, release={}",
        CATALOGUE.scenarios.len(),
        if jobs == 1 { "" } else { "s" },
        !cfg!(debug_assertions)
    );
    let started = Instant::now();
    let mut window = (Instant::now(), 0u64);
    let mut points: Vec<SoakPoint> = Vec::new();
    // One reading per group of `jobs` seeds: the window spans the same seeds.
    let window_len = (SOAK_WINDOW / jobs).max(1);
    let mut readings: std::collections::VecDeque<u64> =
        std::collections::VecDeque::with_capacity(window_len);
    let mut checkpoints: Vec<u64> = (1..=10).map(|k| seeds * k / 10).collect();
    checkpoints.push(1_000);
    let opts = SweepOptions {
        jobs,
        progress: false,
        stop_after_failures: None,
    };
    let mut done = 0u64;
    while done < seeds {
        let group: Vec<u64> = (done..(done + jobs as u64).min(seeds)).collect();
        let results = sweep(
            &group,
            &opts,
            |seed| {
                CATALOGUE
                    .scenarios
                    .iter()
                    .filter_map(|def| {
                        let s = Scenario::new(*def, seed);
                        let r = overcast_harness::run::run_isolated_with(*def, &s);
                        (!r.passed()).then(|| {
                            format!(
                                "seed {seed} of {}: {}",
                                def.name(),
                                r.first_problem().unwrap_or_default()
                            )
                        })
                    })
                    .collect::<Vec<String>>()
            },
            |problems| !problems.is_empty(),
        );
        for (seed, r) in results {
            match r {
                Ok(problems) => problems.iter().for_each(|p| println!("{p}")),
                Err(panic) => println!("seed {seed}: the run panicked: {panic}"),
            }
        }
        let before = done;
        done += group.len() as u64;
        // Freed memory back to the system first, so that resident memory is
        // what the process holds, not the allocator's high-water mark.
        let now = resident_collected();
        if readings.len() == window_len {
            readings.pop_front();
        }
        readings.push_back(now.total);
        if checkpoints.iter().any(|c| before < *c && *c <= done) {
            let rate = (done - window.1) as f64 / window.0.elapsed().as_secs_f64();
            window = (Instant::now(), done);
            let mut sorted: Vec<u64> = readings.iter().copied().collect();
            sorted.sort_unstable();
            let point = SoakPoint {
                seeds: done,
                resident: now,
                window: (
                    sorted[sorted.len() / 2],
                    sorted[0],
                    sorted[sorted.len() - 1],
                ),
                heap: heap_committed(),
            };
            let (r, (median, least, most)) = (point.resident, point.window);
            println!(
                "after {done:>7} seeds: resident {} (anonymous {}, file-backed {}); over the last {} seeds median {}, range {} to {}; heap committed {}, {rate:.2} seeds/s since the last checkpoint ({:.0} s in all)",
                mib(r.total * 1024),
                mib(r.anon * 1024),
                mib(r.file * 1024),
                sorted.len() * jobs,
                mib(median * 1024),
                mib(least * 1024),
                mib(most * 1024),
                mib(point.heap),
                started.elapsed().as_secs_f64()
            );
            points.push(point);
        }
    }
    if let (Some(first), Some(last)) = (points.first(), points.last()) {
        let change = |a: u64, b: u64| (b as f64 / a.max(1) as f64 - 1.0) * 100.0;
        println!(
            "from {} to {} seeds: resident {:+.1}% (anonymous {:+.1}%, file-backed {:+.1}%)",
            first.seeds,
            last.seeds,
            change(first.resident.total, last.resident.total),
            change(first.resident.anon, last.resident.anon),
            change(first.resident.file, last.resident.file)
        );
        println!(
            "from {} to {} seeds: median resident over the last {SOAK_WINDOW} seeds {:+.1}%",
            first.seeds,
            last.seeds,
            change(first.window.0, last.window.0)
        );
        println!(
            "from {} to {} seeds: heap committed {:+.1}%",
            first.seeds,
            last.seeds,
            change(first.heap, last.heap)
        );
    }
    0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the benchmark; returns the exit code.
pub fn run(args: &BenchArgs) -> u8 {
    if args.soak {
        return soak(args.soak_seeds, args.jobs.unwrap_or(1));
    }
    let def = match CATALOGUE.find(&args.scenario) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("overcast: {e}");
            return 2;
        }
    };
    let template = Scenario::new(def, 0);
    let topology = def
        .topology(&template.params)
        .expect("default parameters are valid");
    // The floor's two sides: the nodes that serve and the awaited ones that drive.
    let count = |awaited: bool| -> usize {
        topology
            .roles
            .iter()
            .filter(|r| r.awaited == awaited)
            .map(|r| r.count)
            .sum()
    };
    let (servers, clients) = (count(false), count(true));
    if args.seeds == 0 || args.rounds == 0 {
        eprintln!("overcast: --seeds and --rounds must be at least 1");
        return 2;
    }
    let jobs = args.jobs.unwrap_or(SweepOptions::default().jobs).max(1);
    let opts = SweepOptions {
        jobs,
        progress: false,
        stop_after_failures: None,
    };
    let seeds: Vec<u64> = (0..args.seeds).collect();
    println!(
        "overcast bench: scenario {} ({} serving and {} driving nodes, default faults), {} seeds x {} rounds, {jobs} jobs, release={}",
        args.scenario,
        servers,
        clients,
        args.seeds,
        args.rounds,
        !cfg!(debug_assertions)
    );
    // Messages per seed (one request and one answer per attempt), from a first pass.
    let counts = sweep(
        &seeds,
        &opts,
        |seed| {
            let mut s = template.clone();
            s.seed = seed;
            let r = run_with(def, &s);
            let n = r.op_count();
            (n.client + n.retries, n.client)
        },
        |_| false,
    );
    let counts: Vec<(usize, usize)> = counts
        .into_iter()
        .map(|(_, r)| r.unwrap_or((0, 0)))
        .collect();
    let messages: usize = counts.iter().map(|c| c.0 * 2).sum();
    let ops: usize = counts.iter().map(|c| c.1).sum();
    let (mut harness, mut bare, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    // Each seed runs both sides back to back on one worker, each on a fresh
    // thread and timed on its own, the side that goes first alternating with
    // the seed: both meet the same machine. (Timed one after the other, whole
    // sweep against whole sweep, the ratio moved by a tenth from one run to
    // the next on a shared machine.)
    let timed = |side: &(dyn Fn() + Sync)| {
        let t = Instant::now();
        let _ = run_isolated(side);
        t.elapsed().as_secs_f64()
    };
    // Seeds per second of a side alone on `jobs` workers.
    let rate = |busy: f64| seeds.len() as f64 * jobs as f64 / busy;
    for round in 0..args.rounds {
        let times = sweep(
            &seeds,
            &opts,
            |seed| {
                let run_harness = || {
                    let mut s = template.clone();
                    s.seed = seed;
                    run_with(def, &s);
                };
                let run_floor = || {
                    let round_trips = counts[seed as usize].0.div_ceil(clients.max(1));
                    ping_pong(seed, servers.max(1), clients.max(1), round_trips, 96);
                };
                if seed % 2 == 0 {
                    let h = timed(&run_harness);
                    (h, timed(&run_floor))
                } else {
                    let b = timed(&run_floor);
                    (timed(&run_harness), b)
                }
            },
            |_| false,
        );
        let (h_busy, b_busy) = times
            .iter()
            .filter_map(|(_, t)| t.as_ref().ok())
            .fold((0.0, 0.0), |(h, b), (th, tb)| (h + th, b + tb));
        let (h, b) = (rate(h_busy), rate(b_busy));
        let ratio = b / h;
        println!(
            "round {}: harness {h:.1} seeds/s, bare madsim {b:.1} seeds/s, ratio {ratio:.2}x",
            round + 1
        );
        harness.push(h);
        bare.push(b);
        ratios.push(ratio);
    }
    let (h, b) = (median(harness), median(bare));
    println!(
        "median: harness {h:.1} seeds/s ({:.0} ops/s), bare madsim {b:.1} seeds/s, same messages ({:.0} per seed); harness/bare time ratio {:.2}x",
        h * ops as f64 / seeds.len() as f64,
        messages as f64 / seeds.len() as f64,
        median(ratios)
    );
    0
}
