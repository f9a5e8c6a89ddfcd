//! The header a run prints before it starts: the scenario, the seed, every
//! derived option, and the fault plan the run will get, in words and units.

use overcast_harness::registry::DynScenario;
use overcast_harness::scenario::Scenario;
use overcast_sim::faults::{Fault, FaultPlan};

/// A probability as a percentage, to three significant digits (at most
/// three decimals): "2.1%", "12.4%", "0.05%".
pub fn percent(p: f64) -> String {
    let v = p * 100.0;
    let decimals = if v >= 10.0 {
        1
    } else if v >= 1.0 {
        2
    } else {
        3
    };
    let text = format!("{v:.decimals$}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// `n` and a noun, plural when `n` is not 1: "1 crash", "3 pauses".
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "a, b and c".
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A range of ms: "1–10 ms", or "5 ms" when both ends agree.
fn ms_range((lo, hi): (u64, u64)) -> String {
    if lo == hi {
        format!("{lo} ms")
    } else {
        format!("{lo}–{hi} ms")
    }
}

/// Simulated ms as seconds: "29.8 s".
fn secs(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// The network line: loss, latency, duplicates and datagrams held back.
fn network(plan: &FaultPlan) -> String {
    let n = &plan.network;
    let mut parts = vec![format!("latency {}", ms_range(plan.latency_ms))];
    if plan.packet_loss > 0.0 {
        parts.push(format!("{} of datagrams lost", percent(plan.packet_loss)));
    }
    if n.duplicate > 0.0 {
        parts.push(format!(
            "{} duplicated ({} later)",
            percent(n.duplicate),
            ms_range(n.duplicate_delay_ms)
        ));
    }
    if n.reorder > 0.0 {
        parts.push(format!(
            "{} held back {} (reordered)",
            percent(n.reorder),
            ms_range(n.reorder_delay_ms)
        ));
    }
    format!("network: {}", parts.join(", "))
}

/// The disk line: each storage fault's rate, and what a crash loses.
fn disk(plan: &FaultPlan) -> String {
    let d = &plan.storage;
    let mut parts = Vec::new();
    for (rate, what) in [
        (d.flip_on_write, "of writes flip a bit"),
        (d.flip_on_read, "of reads flip a bit"),
        (d.misdirected_write, "of writes land elsewhere"),
        (d.fsync_error, "of syncs fail"),
        (d.lost_write, "of syncs lie (the disk loses them)"),
    ] {
        if rate > 0.0 {
            parts.push(format!("{} {what}", percent(rate)));
        }
    }
    if plan.lose_unsynced_on_crash {
        parts.push("a crash loses unsynced writes".into());
    }
    if let Some(nodes) = &plan.corrupt_disks {
        parts.push(format!(
            "writes are corrupted or lost on {} only (the budget)",
            and_list(nodes)
        ));
    }
    if parts.is_empty() {
        "disk: no faults".into()
    } else {
        format!("disk: {}", parts.join(", "))
    }
}

/// The clocks line: how many are off true time, and by how much.
fn clocks(plan: &FaultPlan) -> String {
    if plan.clocks.is_empty() {
        return "clocks: true time on every node".into();
    }
    let offset = plan
        .clocks
        .values()
        .map(|c| c.offset_ms.unsigned_abs())
        .max();
    let drift = plan
        .clocks
        .values()
        .map(|c| c.drift_ppm.unsigned_abs())
        .max();
    let steps: usize = plan.clocks.values().map(|c| c.steps.len()).sum();
    let step = plan
        .clocks
        .values()
        .flat_map(|c| c.steps.iter().map(|(_, d)| d.unsigned_abs()))
        .max();
    let rates: usize = plan.clocks.values().map(|c| c.rate_changes.len()).sum();
    let mut parts = vec![count(plan.clocks.len(), "node skewed", "nodes skewed")];
    if let Some(offset) = offset.filter(|o| *o > 0) {
        parts.push(format!("up to ±{offset} ms off"));
    }
    if let Some(drift) = drift.filter(|d| *d > 0) {
        parts.push(format!("drift up to ±{drift} ppm"));
    }
    if steps > 0 {
        parts.push(format!(
            "{} (up to ±{} ms)",
            count(steps, "step", "steps"),
            step.unwrap_or(0)
        ));
    }
    if rates > 0 {
        parts.push(count(rates, "rate change", "rate changes"));
    }
    format!("clocks: {}", parts.join(", "))
}

/// The timed faults: how many of each kind, and over which stretch of time.
fn timed(plan: &FaultPlan) -> String {
    if plan.events.is_empty() {
        return "timed: none".into();
    }
    let kinds: [(&str, &str, &str); 6] = [
        ("crash", "crash", "crashes"),
        ("partition", "partition", "partitions"),
        (
            "partition_one_way",
            "one-way partition",
            "one-way partitions",
        ),
        ("pause", "pause", "pauses"),
        ("isolate", "isolation", "isolations"),
        ("clock_rate", "clock-rate change", "clock-rate changes"),
    ];
    let of = |kind: &str| {
        plan.events
            .iter()
            .filter(|e| Fault::kind(&e.fault) == kind)
            .count()
    };
    let words: Vec<String> = kinds
        .iter()
        .map(|(kind, one, many)| (of(kind), *one, *many))
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, one, many)| count(n, one, many))
        .collect();
    let first = plan.events.iter().map(|e| e.at_ms).min().unwrap_or(0);
    let last = plan.events.iter().map(|e| e.at_ms).max().unwrap_or(0);
    format!(
        "timed: {} between {} and {}",
        and_list(&words),
        secs(first),
        secs(last)
    )
}

/// The fault plan in words, one line per kind of fault.
pub fn fault_lines(plan: &FaultPlan) -> Vec<String> {
    vec![network(plan), disk(plan), clocks(plan), timed(plan)]
}

/// The run header: scenario, seed, options, the scenario's parameters and
/// the fault plan the run gets.
pub fn header(def: &dyn DynScenario, s: &Scenario) -> String {
    let plan = overcast_harness::run::resolved(def, s)
        .ok()
        .and_then(|r| r.plan)
        .unwrap_or_else(FaultPlan::none);
    let bugs = if s.bugs.is_empty() {
        "none".to_string()
    } else {
        s.bugs.join(",")
    };
    let mut out = format!(
        "overcast: scenario {} seed {} ({})\noptions swarm={} bugs={} {}",
        s.name,
        s.seed,
        def.describe(),
        if s.swarm { "on" } else { "off" },
        bugs,
        def.header(&s.params),
    );
    match (&s.budget, s.beyond_budget) {
        (Some(b), false) => out += &format!("\nbudget  {}", b.promise),
        (Some(b), true) => out += &format!("\nbudget  beyond it (drawn past: {})", b.promise),
        (None, _) => {}
    }
    if !s.branch.is_empty() {
        out += &format!(
            "\nbranch  {} (the seed's run up to each time, that branch's draws after it)",
            overcast_sim::rng::branch_path_words(&s.branch)
        );
    }
    for (i, line) in fault_lines(&plan).iter().enumerate() {
        out += if i == 0 { "\nfaults  " } else { "\n        " };
        out += line;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use overcast_sim::faults::{FaultEvent, NetworkFaults, StorageFaults};

    #[test]
    fn rates_read_as_percentages() {
        assert_eq!(percent(0.021), "2.1%");
        assert_eq!(percent(0.0005), "0.05%");
        assert_eq!(percent(0.01), "1%");
        assert_eq!(percent(0.123456), "12.3%");
        assert_eq!(percent(0.03205), "3.21%");
    }

    #[test]
    fn a_plan_reads_in_words_and_units() {
        let mut plan = FaultPlan::none();
        plan.packet_loss = 0.005;
        plan.latency_ms = (1, 40);
        plan.network = NetworkFaults {
            duplicate: 0.021,
            duplicate_delay_ms: (1, 500),
            reorder: 0.0,
            reorder_delay_ms: (0, 0),
        };
        plan.storage = StorageFaults {
            fsync_error: 0.005,
            ..StorageFaults::default()
        };
        plan.events = vec![
            FaultEvent {
                at_ms: 400,
                fault: Fault::Crash {
                    node: "server-0".into(),
                    down_ms: 100,
                },
            },
            FaultEvent {
                at_ms: 2500,
                fault: Fault::Pause {
                    node: "server-1".into(),
                    for_ms: 100,
                },
            },
        ];
        let lines = fault_lines(&plan);
        assert_eq!(
            lines[0],
            "network: latency 1–40 ms, 0.5% of datagrams lost, 2.1% duplicated (1–500 ms later)"
        );
        assert_eq!(lines[1], "disk: 0.5% of syncs fail");
        assert_eq!(lines[2], "clocks: true time on every node");
        assert_eq!(
            lines[3],
            "timed: 1 crash and 1 pause between 0.4 s and 2.5 s"
        );
    }
}
