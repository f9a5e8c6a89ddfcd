//! What the unique-values pass costs where it cannot help, and saves where
//! it can: the checker with the pass on and off (`Options::unique_values`)
//! on the shipped corpora (`lin/tests/data`: etcd, kv, the examples) and the
//! bench's generated cases ([`overcast_lin::gen::bench_cases`], the mix).
//!
//! `time [ROUNDS]`: per case, rounds of the two sides one after the other
//! (which goes first alternates), each side checking the case as many
//! times as fill about 30 ms; prints the medians over the rounds of the
//! wall time and of the CPU time of all the process's threads per check,
//! and the ratio on/off.
//!
//! `mem CASE on|off`: checks one case once and prints the peak of the heap
//! the check itself allocated (a counting allocator: the peak during the
//! check less what was allocated before it) and the process's peak
//! resident memory (VmHWM). Run each side in its own process, several
//! times. `mem list` names the cases.
//!
//! `keys CASE`: each key of the case checked alone on one worker, the
//! check's heap peak with the pass on and off (what a key costs each way,
//! without the luck of which keys two workers hold at once).
//!
//! `cargo run --release -p overcast-lin --features measure --example pass_cost -- time 15`

use overcast_lin::gen::{bench_cases, generate, unique_mix};
use overcast_lin::kv::{parse_kvhist, KvInput, KvOutput, KvSpec};
use overcast_lin::{check, Operation, Options};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: defers to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Relaxed) + l.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let now = LIVE.fetch_add(new - l.size(), Relaxed) + new - l.size();
                PEAK.fetch_max(now, Relaxed);
            } else {
                LIVE.fetch_sub(l.size() - new, Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

type History = (KvSpec, Vec<Operation<KvInput, KvOutput>>);

/// One case: a name and its histories (checked one after the other).
struct Case {
    name: String,
    histories: Vec<History>,
}

fn corpus(name: &str) -> Vec<(String, History)> {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data")).join(name);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|f| {
            let h = parse_kvhist(&std::fs::read_to_string(f).ok()?).ok()?;
            let stem = f.file_stem()?.to_string_lossy().into_owned();
            Some((stem, (h.spec, h.ops)))
        })
        .collect()
}

/// The cases, each built only when `want` says so.
fn cases(want: &dyn Fn(&str) -> bool) -> Vec<Case> {
    let mut out = Vec::new();
    let mut add = |name: String, histories: &dyn Fn() -> Vec<History>| {
        if want(&name) {
            out.push(Case {
                histories: histories(),
                name,
            });
        }
    };
    add("etcd_102_files".into(), &|| {
        corpus("porcupine-etcd")
            .into_iter()
            .map(|(_, h)| h)
            .collect()
    });
    add("examples_12_files".into(), &|| {
        corpus("examples").into_iter().map(|(_, h)| h).collect()
    });
    for stem in [
        "c01-ok", "c01-bad", "c10-ok", "c10-bad", "c50-ok", "c50-bad",
    ] {
        add(format!("kv_{stem}"), &|| {
            corpus("porcupine-kv")
                .into_iter()
                .filter(|(s, _)| s == stem)
                .map(|(_, h)| h)
                .collect()
        });
    }
    for (name, o) in bench_cases() {
        add(name.to_string(), &|| {
            let g = generate(&o);
            vec![(g.spec, g.ops)]
        });
    }
    for stale in [false, true] {
        let kind = if stale { "bad" } else { "ok" };
        add(
            format!("unique_mix_1000_ops_48_clients_seed_1_{kind}"),
            &|| {
                let g = generate(&unique_mix(1, 1000, 48, stale));
                vec![(g.spec, g.ops)]
            },
        );
    }
    out
}

fn opts(on: bool) -> Options {
    Options {
        unique_values: on,
        time_budget: Some(Duration::from_secs(60)),
        ..Options::default()
    }
}

/// The CPU time of all the process's threads so far
/// (`clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`, from the C library std
/// links anyway).
fn cpu() -> Duration {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec (two 64-bit fields on
    // 64-bit Linux).
    if unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.sec as u64, ts.nsec as u32)
}

fn run(case: &Case, on: bool) {
    let o = opts(on);
    for (spec, ops) in &case.histories {
        std::hint::black_box(check(spec, ops, &o).verdict);
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn time(rounds: usize, filter: Option<&str>) {
    let cs = cases(&|n: &str| filter.is_none_or(|f| n.contains(f)));
    println!(
        "{:48} {:>11} {:>11} {:>7} {:>11} {:>11} {:>7}",
        "case (per check of all its files)",
        "wall on",
        "wall off",
        "on/off",
        "cpu on",
        "cpu off",
        "on/off"
    );
    for case in &cs {
        // Warm up, and size a sample to about 30 ms.
        let t = Instant::now();
        run(case, true);
        run(case, false);
        let once = t.elapsed().as_secs_f64() / 2.0;
        let reps = ((0.03 / once.max(1e-6)) as usize).clamp(1, 10_000);
        let mut wall = [Vec::new(), Vec::new()];
        let mut cpus = [Vec::new(), Vec::new()];
        for r in 0..rounds {
            let order = if r % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for on in order {
                let (t, c) = (Instant::now(), cpu());
                for _ in 0..reps {
                    run(case, on);
                }
                let side = usize::from(!on);
                wall[side].push(t.elapsed().as_secs_f64() / reps as f64);
                cpus[side].push((cpu() - c).as_secs_f64() / reps as f64);
            }
        }
        let [won, woff] = wall.map(|mut v| median(&mut v));
        let [con, coff] = cpus.map(|mut v| median(&mut v));
        println!(
            "{:48} {:>9.3}ms {:>9.3}ms {:>7.3} {:>9.3}ms {:>9.3}ms {:>7.3}",
            case.name,
            won * 1e3,
            woff * 1e3,
            won / woff,
            con * 1e3,
            coff * 1e3,
            con / coff
        );
    }
}

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn mem(name: &str, on: bool) {
    let cs = cases(&|n: &str| n == name);
    let Some(case) = cs.first() else {
        eprintln!("no case {name}; `mem list` names them");
        std::process::exit(2);
    };
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    run(case, on);
    let peak = PEAK.load(Relaxed) - before;
    println!(
        "{name} {} check_peak_heap_bytes {peak} vm_hwm_kb {}",
        if on { "on" } else { "off" },
        vm_hwm_kb()
    );
}

/// Each key of the case's first history checked alone, one worker: the
/// check's heap peak with the pass on and off, a line per key.
fn keys(name: &str) {
    let cs = cases(&|n: &str| n == name);
    let Some((spec, ops)) = cs.first().and_then(|c| c.histories.first()) else {
        eprintln!("no case {name}; `mem list` names them");
        std::process::exit(2);
    };
    let mut keys: Vec<&str> = ops.iter().map(|o| o.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    for k in keys {
        let kops: Vec<_> = ops.iter().filter(|o| o.key == k).cloned().collect();
        let peak = |on: bool| {
            let o = Options {
                parallel: false,
                ..opts(on)
            };
            let before = LIVE.load(Relaxed);
            PEAK.store(before, Relaxed);
            std::hint::black_box(check(spec, &kops, &o).verdict);
            PEAK.load(Relaxed) - before
        };
        println!(
            "{k} ops {} on {} off {}",
            kops.len(),
            peak(true),
            peak(false)
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("mem") if args.get(1).map(String::as_str) == Some("list") => {
            for c in cases(&|_: &str| true) {
                println!("{}", c.name);
            }
        }
        Some("keys") => keys(args.get(1).expect("a case")),
        Some("mem") => {
            let name = args.get(1).expect("a case");
            mem(name, args.get(2).map(String::as_str) != Some("off"));
        }
        _ => {
            let rounds = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(15);
            time(rounds, args.get(2).map(String::as_str));
        }
    }
}
