//! Running a scenario: resolve its fault plan, build the world, drive the
//! workload, record the history, check it, and summarise.

use crate::bridge::{ClockAdapter, DiskAdapter};
use crate::bugs;
use crate::history::{Call, Outcome};
use crate::occ;
use crate::scenario::Scenario;
use overcast_model::client::{ClientConfig, StoreClient};
use overcast_model::server::{serve, ServerConfig, ServerStats};
use overcast_sim::check::Violation;
use overcast_sim::faults::{FaultMix, FaultPlan};
use overcast_sim::history::{History, Recorder};
use overcast_sim::lin;
use overcast_sim::rng::stream;
use overcast_sim::world::{run_world, ClientEnv, ServerEnv, Topology, WorldConfig, WorldOutcome};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The linearizability checker's budget inside a run, in search steps per
/// item (not seconds: the same seed gets the same verdict and report on any
/// machine, however loaded). The hardest `occ` seed of 0..300 takes about
/// 8,000; the hardest with a seeded bug switched on about 3,000.
pub const LIN_MAX_STEPS: u64 = 5_000_000;

/// Everything one run produced.
#[derive(Debug)]
pub struct RunResult {
    /// The scenario, with the fault plan it actually ran (saved with failures).
    pub scenario: Scenario,
    /// The recorded history.
    pub history: History<Call, Outcome>,
    /// What the world did.
    pub world: WorldOutcome,
    /// Server counts, summed over servers.
    pub server: ServerStats,
    /// Broken properties, most important first; empty when every check holds.
    pub violations: Vec<Violation>,
    /// The linearizability report (with the failing sub-history when there is one).
    pub lin: lin::Report,
    /// Hash of the whole history: equal for two runs of one scenario.
    pub trace_hash: u64,
    /// Wall time of the whole run.
    pub wall: Duration,
    /// Wall time of the checks (linearizability, E1, R1–R3) alone.
    pub check_wall: Duration,
}

impl RunResult {
    /// True when every check held.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    /// Operations whose outcome is unknown.
    pub fn unknown_ops(&self) -> usize {
        self.history
            .ops
            .iter()
            .filter(|o| o.result.is_none())
            .count()
    }

    /// Attempts beyond the first of each operation.
    pub fn retries(&self) -> usize {
        self.history
            .ops
            .iter()
            .map(|o| o.attempts.len().saturating_sub(1))
            .sum()
    }

    /// Faults injected: world faults plus server fault points.
    pub fn faults_injected(&self) -> u64 {
        self.world.faults.values().sum::<u64>() + self.server.transient.values().sum::<u64>()
    }

    /// A few lines for the terminal.
    pub fn summary(&self) -> String {
        let s = &self.scenario;
        let mut faults: Vec<String> = self
            .world
            .faults
            .iter()
            .map(|(k, n)| format!("{k}×{n}"))
            .collect();
        faults.extend(
            self.server
                .transient
                .iter()
                .map(|(k, n)| format!("{k}×{n}")),
        );
        if faults.is_empty() {
            faults.push("none".into());
        }
        let checks = if self.passed() {
            format!(
                "linearizability {} ({} items), E1 ok, R1–R3 ok",
                self.lin.verdict.as_str(),
                self.lin.keys
            )
        } else {
            self.violations
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("\n        ")
        };
        format!(
            "ops     {} ({} unknown outcome), retries {}\n\
             faults  {} injected: {}\n\
             time    simulated {:.1} s, wall {:.1} ms (checks {:.1} ms); trace {:016x}\n\
             checks  {}",
            self.history.ops.len(),
            self.unknown_ops(),
            self.retries(),
            self.faults_injected(),
            faults.join(" "),
            self.world.sim_ns as f64 / 1e9,
            self.wall.as_secs_f64() * 1e3,
            self.check_wall.as_secs_f64() * 1e3,
            self.trace_hash,
            checks,
        ) + &format!("\nverdict {}", if self.passed() { "PASS" } else { "FAIL" })
            + &if s.bugs.is_empty() {
                String::new()
            } else {
                format!(" (bugs on: {})", s.bugs.join(", "))
            }
    }
}

/// The fault plan a scenario runs: its explicit plan, or one drawn from its seed.
pub fn resolve_plan(s: &Scenario) -> FaultPlan {
    if let Some(plan) = &s.plan {
        return plan.clone();
    }
    let mix = if s.swarm {
        FaultMix::swarm(&mut stream(s.seed, "swarm"))
    } else {
        s.faults.clone()
    };
    let topo = Topology {
        servers: s.servers,
        clients: s.clients,
    };
    mix.plan(
        &mut stream(s.seed, "fault-plan"),
        &topo.server_names(),
        &topo.client_names(),
        s.fault_window_ms,
    )
}

/// Runs a scenario on the current thread (use the runner for a fresh one).
/// The scenario must be valid ([`Scenario::validate`]).
pub fn run(s: &Scenario) -> RunResult {
    let started = Instant::now();
    let switches = bugs::switches(&s.bugs).unwrap_or_default();
    let plan = resolve_plan(s);
    let mut resolved = s.clone();
    resolved.plan = Some(plan.clone());
    let topo = Topology {
        servers: s.servers,
        clients: s.clients,
    };
    let cfg = WorldConfig {
        seed: s.seed,
        topology: topo,
        plan,
        deadline: Duration::from_millis(s.deadline_ms),
        quiet: Duration::from_millis(s.quiet_ms),
    };
    let stats = Arc::new(Mutex::new(ServerStats::default()));
    // Room for every call: read–modify–writes make two or more per operation.
    let recorder: Recorder<Call, Outcome> =
        Recorder::with_capacity(s.clients * s.ops_per_client * 2);

    let server_scenario = s.clone();
    let server_stats = stats.clone();
    let server = move |env: ServerEnv| {
        let s = &server_scenario;
        let cfg = ServerConfig {
            bind: Topology::server_addr(env.index),
            containers: vec![occ::CONTAINER.to_string()],
            faults: s.server_faults.clone(),
            fsync_ms: s.fsync_ms,
            store_bugs: switches.store,
            ack_before_sync: switches.ack_before_sync,
        };
        let rng = stream(
            env.seed,
            &format!("server-{}-{}", env.index, env.incarnation),
        );
        serve(
            cfg,
            Arc::new(ClockAdapter(env.clock)),
            Arc::new(DiskAdapter(env.disk)),
            Box::new(rng),
            server_stats.clone(),
        )
    };
    let client_scenario = s.clone();
    let client_recorder = recorder.clone();
    let client = move |env: ClientEnv| {
        let s = client_scenario.clone();
        let recorder = client_recorder.clone();
        async move {
            let cfg = ClientConfig {
                servers: env.servers.clone(),
                partitions: s.partitions,
                retry: s.retry.clone(),
                retry_write_after_timeout: switches.retry_write_after_timeout,
                ignore_retry_after: switches.ignore_retry_after,
            };
            let rng = stream(env.seed, &format!("client-{}-sdk", env.index));
            let Ok(mut client) = StoreClient::connect(cfg, Box::new(rng)).await else {
                tracing::error!("client {} could not bind", env.index);
                return;
            };
            let deadline_ns = env.deadline.as_nanos() as u64;
            occ::client_workload(s, env.index, &mut client, recorder, deadline_ns).await;
        }
    };
    let world = run_world(&cfg, server, client);
    let history = recorder.take_history(world.events.clone());
    let lin_opts = lin::Options {
        max_steps: Some(LIN_MAX_STEPS),
        parallel: false,
        ..lin::Options::default()
    };
    let checks_started = Instant::now();
    let (mut violations, lin) = occ::check(s, &history, &lin_opts);
    let check_wall = checks_started.elapsed();
    if world.clients_finished < s.clients {
        violations.push(Violation {
            property: "liveness".into(),
            message: format!(
                "{} of {} clients never finished their workload after every fault was healed",
                s.clients - world.clients_finished,
                s.clients
            ),
            ops: vec![],
        });
    }
    let server = stats.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let trace_hash = history.trace_hash();
    RunResult {
        scenario: resolved,
        history,
        world,
        server,
        violations,
        lin,
        trace_hash,
        wall: started.elapsed(),
        check_wall,
    }
}
