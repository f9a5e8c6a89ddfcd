//! The runner: one seed on a fresh thread (so that nothing thread-local leaks
//! from one run into the next), and sweeps of many seeds over all cores with
//! a progress bar.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs `f` on a fresh thread; a panic becomes `Err` with its message.
///
/// std's `HashMap` seeds and madsim's per-thread state are deterministic only
/// on a fresh thread, which costs ~0.1 ms: cheap beside a run.
pub fn run_isolated<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    keep_freed_memory();
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("overcast-run".into())
            .stack_size(16 << 20)
            .spawn_scoped(s, f)
            .map_err(|e| format!("could not start a thread: {e}"))?;
        handle.join().map_err(|p| panic_message(&*p))
    })
}

/// Makes glibc's allocator keep freed memory for reuse. A run's thread gets a
/// malloc arena that later runs' threads reuse; by default glibc gives the
/// arena's free memory back to the kernel (and serves blocks of a few
/// hundred KB from fresh mappings), so every run faulted its memory in again
/// (~250 page faults a run). Allocation results, and so runs, are the same.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            extern "C" {
                fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
            }
            const M_TRIM_THRESHOLD: std::ffi::c_int = -1;
            const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
            // SAFETY: mallopt only sets allocator parameters; these two
            // values are in range (the mmap threshold is at most 32 MB).
            unsafe {
                mallopt(M_TRIM_THRESHOLD, 256 << 20);
                mallopt(M_MMAP_THRESHOLD, 4 << 20);
            }
        });
    }
}

/// The text of a panic payload.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".into()
    }
}

/// How a sweep runs.
#[derive(Clone, Debug)]
pub struct SweepOptions {
    /// Worker threads (default: all cores).
    pub jobs: usize,
    /// Draw a progress bar on stderr (hidden when stderr is not a terminal).
    pub progress: bool,
    /// Stop handing out seeds after this many failures (`None`: run them all).
    pub stop_after_failures: Option<usize>,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            jobs: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            progress: true,
            stop_after_failures: None,
        }
    }
}

/// Runs `run(seed)` for every seed, each on a fresh thread, `jobs` at a time.
/// Results come back in seed order; seeds skipped after an early stop are
/// absent. `failed` says which results count as failures.
pub fn sweep<T, F, P>(
    seeds: &[u64],
    opts: &SweepOptions,
    run: F,
    failed: P,
) -> Vec<(u64, Result<T, String>)>
where
    T: Send,
    F: Fn(u64) -> T + Sync,
    P: Fn(&T) -> bool + Sync,
{
    let bar = if opts.progress {
        let b =
            ProgressBar::with_draw_target(Some(seeds.len() as u64), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} seeds  {per_sec}  eta {eta}  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let next = AtomicUsize::new(0);
    let failures = AtomicUsize::new(0);
    let results: Mutex<Vec<(u64, Result<T, String>)>> = Mutex::new(Vec::with_capacity(seeds.len()));
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.max(1) {
            s.spawn(|| loop {
                if opts
                    .stop_after_failures
                    .is_some_and(|max| failures.load(Ordering::Relaxed) >= max)
                {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&seed) = seeds.get(i) else { break };
                let r = run_isolated(|| run(seed));
                if r.as_ref().map_or(true, &failed) {
                    let n = failures.fetch_add(1, Ordering::Relaxed) + 1;
                    bar.set_message(format!("{n} failed"));
                }
                bar.inc(1);
                results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((seed, r));
            });
        }
    });
    bar.finish_and_clear();
    let mut out = results.into_inner().unwrap_or_else(|e| e.into_inner());
    out.sort_by_key(|(seed, _)| *seed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_returns_every_seed_in_order_and_catches_panics() {
        let opts = SweepOptions {
            jobs: 2,
            progress: false,
            stop_after_failures: None,
        };
        let seeds: Vec<u64> = (0..20).collect();
        let out = sweep(
            &seeds,
            &opts,
            |s| if s == 13 { panic!("boom {s}") } else { s * 2 },
            |_| false,
        );
        assert_eq!(out.len(), 20);
        assert!(out.iter().map(|(s, _)| *s).eq(0..20));
        assert_eq!(out[13].1, Err("boom 13".to_string()));
        assert_eq!(out[4].1, Ok(8));
    }

    #[test]
    fn sweep_stops_early_after_failures() {
        let opts = SweepOptions {
            jobs: 1,
            progress: false,
            stop_after_failures: Some(1),
        };
        let seeds: Vec<u64> = (0..100).collect();
        let out = sweep(&seeds, &opts, |s| s, |s| *s == 3);
        assert_eq!(out.len(), 4);
    }
}
