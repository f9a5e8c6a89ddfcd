//! `Scenario`: everything one run depends on (seed, topology, workload, faults,
//! bugs), serialisable and versioned so that a failing run can be saved and
//! replayed exactly; and a proptest strategy that generates and shrinks it.

use overcast_model::retry::RetryOptions;
use overcast_model::server::FaultRates;
use overcast_sim::faults::{FaultMix, FaultPlan};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

/// The scenario file format version.
pub const SCENARIO_VERSION: u32 = 1;

/// The names of the scenarios `run` and `sweep` know.
pub const SCENARIOS: &[&str] = &["occ"];

/// Relative weights of the operations a client picks from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpMix {
    /// Plain reads.
    pub read: u32,
    /// Unconditional puts (last writer wins).
    pub blind_write: u32,
    /// Puts with `If-None-Match: *`.
    pub create: u32,
    /// Read–modify–write through the SDK helper (read, then put with `If-Match`).
    pub read_modify_write: u32,
    /// Deletes with `If-Match` on the last ETag the client saw (plain delete if none).
    pub conditional_delete: u32,
    /// Reads with `If-None-Match` on the last ETag the client saw (304 if unchanged).
    #[serde(default)]
    pub conditional_read: u32,
}

impl Default for OpMix {
    fn default() -> Self {
        OpMix {
            read: 20,
            blind_write: 15,
            create: 15,
            read_modify_write: 30,
            conditional_delete: 10,
            conditional_read: 10,
        }
    }
}

/// One run, fully described.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Always [`SCENARIO_VERSION`].
    pub version: u32,
    /// Which workload: `occ`.
    pub name: String,
    /// The seed every random choice derives from.
    pub seed: u64,
    /// Server nodes.
    pub servers: usize,
    /// Client nodes (each runs one sequential workload).
    pub clients: usize,
    /// Partitions the key space is split into (spread over the servers).
    pub partitions: u32,
    /// Distinct items the workload touches.
    pub keys: usize,
    /// Percentage of operations that go to the hot item `k0`.
    pub hot_key_percent: u32,
    /// Operations each client starts (a read–modify–write counts once).
    pub ops_per_client: usize,
    /// Operation weights.
    pub mix: OpMix,
    /// Tries of the read–modify–write helper before it gives up.
    pub rmw_max_tries: u32,
    /// Network, crash, pause and clock faults, drawn from the seed.
    pub faults: FaultMix,
    /// Fault events are drawn over the first this-many simulated ms (about
    /// the length of the workload without faults).
    pub fault_window_ms: u64,
    /// Swarm mode: ignore `faults` and draw the mix itself from the seed.
    #[serde(default)]
    pub swarm: bool,
    /// An explicit fault plan; when present it is used as is (saved failures
    /// carry the plan that was drawn, so a replay does not depend on the generator).
    #[serde(default)]
    pub plan: Option<FaultPlan>,
    /// Server fault points (429, 449, 503, 410, 408).
    pub server_faults: FaultRates,
    /// The SDK's retry budgets and request timeout.
    pub retry: RetryOptions,
    /// Log sync latency range, ms.
    pub fsync_ms: (u64, u64),
    /// Clients start no new operation after this much simulated time, ms.
    pub deadline_ms: u64,
    /// Quiet phase after healing, ms.
    pub quiet_ms: u64,
    /// Seeded bugs switched on, by name.
    #[serde(default)]
    pub bugs: Vec<String>,
}

impl Scenario {
    /// The default scenario called `name` for `seed`; `None` for an unknown name.
    pub fn named(name: &str, seed: u64) -> Option<Scenario> {
        match name {
            "occ" => Some(Scenario::occ(seed)),
            _ => None,
        }
    }

    /// The default `occ` scenario: 2 servers, 4 partitions, 8 clients doing
    /// 100 operations each over 8 items with a hot one, every fault kind on.
    pub fn occ(seed: u64) -> Scenario {
        Scenario {
            version: SCENARIO_VERSION,
            name: "occ".into(),
            seed,
            servers: 2,
            clients: 8,
            partitions: 4,
            keys: 8,
            hot_key_percent: 30,
            ops_per_client: 100,
            mix: OpMix::default(),
            rmw_max_tries: 5,
            faults: FaultMix::default(),
            fault_window_ms: 5_000,
            swarm: false,
            plan: None,
            server_faults: FaultRates {
                throttle: 0.02,
                retry_after_ms: (1, 200),
                retry_with: 0.01,
                unavailable: 0.01,
                gone: 0.01,
                timeout: 0.01,
                gone_name_cache_stale: 0.2,
                gone_range_gone: 0.2,
                gone_lease_not_found: 0.1,
                throttle_without_retry_after: 0.1,
                throttle_zero_retry_after: 0.1,
            },
            retry: RetryOptions::default(),
            fsync_ms: (1, 3),
            deadline_ms: 60_000,
            quiet_ms: 1_000,
            bugs: Vec::new(),
        }
    }

    /// Parses a scenario file; errors say what is wrong in one line.
    pub fn from_json(text: &str) -> Result<Scenario, String> {
        let s: Scenario =
            serde_json::from_str(text).map_err(|e| format!("not a valid scenario: {e}"))?;
        s.validate()?;
        Ok(s)
    }

    /// Checks the values make sense.
    pub fn validate(&self) -> Result<(), String> {
        if self.version != SCENARIO_VERSION {
            return Err(format!(
                "scenario version {} is not supported (expected {SCENARIO_VERSION})",
                self.version
            ));
        }
        if !SCENARIOS.contains(&self.name.as_str()) {
            return Err(format!(
                "unknown scenario '{}' (known: {})",
                self.name,
                SCENARIOS.join(", ")
            ));
        }
        if self.servers == 0 || self.servers > 200 {
            return Err("servers must be between 1 and 200".into());
        }
        if self.clients == 0 || self.clients > 1000 {
            return Err("clients must be between 1 and 1000".into());
        }
        if self.partitions == 0 || self.keys == 0 {
            return Err("partitions and keys must be at least 1".into());
        }
        if self.hot_key_percent > 100 {
            return Err("hot_key_percent must be at most 100".into());
        }
        let m = &self.mix;
        if m.read
            + m.blind_write
            + m.create
            + m.read_modify_write
            + m.conditional_delete
            + m.conditional_read
            == 0
        {
            return Err("the op mix has no weight".into());
        }
        if self.fsync_ms.0 > self.fsync_ms.1 || self.faults.latency_ms.0 > self.faults.latency_ms.1
        {
            return Err("a range has its low end above its high end".into());
        }
        crate::bugs::switches(&self.bugs)?;
        Ok(())
    }

    /// The scenario as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("scenarios serialise")
    }
}

/// Generated `occ` scenarios: small topologies and workloads, any fault mix,
/// shrinking towards fewer clients, keys, ops and faults.
pub fn occ_strategy() -> impl Strategy<Value = Scenario> {
    (
        any::<u64>(),
        1usize..=3,
        1usize..=8,
        1u32..=6,
        1usize..=6,
        0u32..=80,
        5usize..=60,
        any::<bool>(),
    )
        .prop_map(
            |(seed, servers, clients, partitions, keys, hot, ops, swarm)| {
                let mut s = Scenario::occ(seed);
                s.servers = servers;
                s.clients = clients;
                s.partitions = partitions;
                s.keys = keys;
                s.hot_key_percent = hot;
                s.ops_per_client = ops;
                s.swarm = swarm;
                s
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_round_trip_and_unknown_fields_are_refused() {
        let s = Scenario::occ(7);
        assert_eq!(Scenario::from_json(&s.to_json()).unwrap(), s);
        let mut v: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        v["surprise"] = serde_json::json!(1);
        let err = Scenario::from_json(&v.to_string()).unwrap_err();
        assert!(err.contains("surprise"), "{err}");
        v = serde_json::from_str(&s.to_json()).unwrap();
        v["bugs"] = serde_json::json!(["no_such_bug"]);
        assert!(Scenario::from_json(&v.to_string())
            .unwrap_err()
            .contains("unknown bug"));
    }
}
