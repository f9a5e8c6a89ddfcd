//! The scenario registry: the [`ScenarioDef`] trait a scenario implements,
//! its type-erased form [`DynScenario`] that the runner, the shrinker, the
//! bug hunt and the CLI use.
//!
//! A [`crate::catalogue::Catalogue`] lists the scenarios a program knows by
//! name; nothing in the harness names one: `run`, `sweep`, `replay`,
//! `shrink`, `bugs`, `bench` and `check` work for every registered one, and
//! a scenario defined elsewhere (a test's toy) works the same through the
//! functions that take a `&dyn DynScenario`.

use crate::bug::BugInfo;
use crate::error::HarnessError;
use crate::params::{check_limits, ParamError, SizeLimit};
use crate::scenario::Scenario;
use overcast_sim::check::{Checked, Checker, Property, PropertyId, LIVENESS};
use overcast_sim::faults::{FaultBudget, FaultMix};
use overcast_sim::history::History;
use overcast_sim::timeline::{clock_secs, node_lane, secs, Mark, MarkKind, Timeline, Tone};
use overcast_sim::world::{NodeEnv, RoleName, Topology, WorldOutcome};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;

/// The envelope settings a scenario starts from (the seed, bugs and swarm
/// switch come from the command line).
#[derive(Clone, Debug, PartialEq)]
pub struct RunDefaults {
    /// The fault mix.
    pub faults: FaultMix,
    /// Fault events are drawn over this many simulated ms from the start.
    pub fault_window_ms: u64,
    /// Awaited nodes start no new work after this, ms.
    pub deadline_ms: u64,
    /// Quiet phase after healing, ms.
    pub quiet_ms: u64,
}

/// What a scenario's node programs are handed besides the node's own [`NodeEnv`].
#[derive(Clone, Debug)]
pub struct RunCtx {
    /// The run's seed.
    pub seed: u64,
    /// Seeded bugs switched on, by name (validated against the scenario's bugs).
    pub bugs: Vec<String>,
}

/// A node's main future.
pub type NodeFuture = Pin<Box<dyn Future<Output = ()>>>;

/// A node program: called anew for every (re)start of every node.
pub type NodeProgram = Box<dyn Fn(NodeEnv) -> NodeFuture + Send + Sync>;

/// What the world collects at the end: the history and the model's own
/// counters of injected faults (e.g. server fault points by status).
pub type Collect<H> = Box<dyn FnOnce(&WorldOutcome) -> (H, BTreeMap<String, u64>)>;

/// A scenario deployed for one run: its node programs and how to collect
/// what they recorded once the world has ended.
pub struct Deployment<H> {
    /// The program of every node (it looks at `env.role`).
    pub program: NodeProgram,
    /// Called once after the world run.
    pub collect: Collect<H>,
    /// Names the nodes that the plan's [`overcast_sim::faults::Fault::Isolate`]
    /// faults aim at, when they start (none: the scenario draws no such fault).
    pub resolver: Option<overcast_sim::world::Resolver>,
}

/// A shrink step on a scenario's parameters: the `i`-th candidate, or `None`
/// when there is no such candidate (single reductions answer only `i == 0`).
pub type Reduction<P> = (&'static str, fn(&P, usize) -> Option<P>);

/// Half of `n`, not below `min`; `None` when `n` is already at `min` (for reductions).
pub fn halve(n: usize, min: usize) -> Option<usize> {
    (n > min).then(|| (n / 2).max(min))
}

/// Makes a single-candidate reduction answer only for index 0.
pub fn once<P>(i: usize, f: impl FnOnce() -> Option<P>) -> Option<P> {
    if i == 0 {
        f()
    } else {
        None
    }
}

/// History client ids from this one on are a check's own calls (occ's
/// liveness probe, `occ::workload::PROBE_CLIENT`), not the workload's.
pub const CHECK_CLIENTS: usize = 1_000_000;

/// The history's client number of life `incarnation` of node `index`, one of
/// `nodes` nodes of its role: a restarted client is a new client to the
/// checkers (it starts without the old one's state), numbered after every
/// node's earlier lives. [`client_node`] is the inverse.
pub fn history_client(index: usize, incarnation: u32, nodes: usize) -> usize {
    index + incarnation as usize * nodes
}

/// The incarnation name of the life whose operations carry history client
/// number `client` (`ROLE-i`, then `ROLE-i#k` for `client = i + k * nodes`):
/// what a workload names its operations by ([`crate::ops::skipped`]).
pub fn client_incarnation(role: impl RoleName, client: usize, nodes: usize) -> String {
    let node = client_node(role, client, nodes);
    if client >= CHECK_CLIENTS || nodes == 0 || client < nodes {
        return node;
    }
    format!("{node}#{}", client / nodes)
}

/// The node whose operations carry history client number `client`
/// ([`history_client`]'s inverse): `ROLE-i` for `client = i + life * nodes`.
/// A check's own clients (from [`CHECK_CLIENTS`] on) keep a lane of their own.
pub fn client_node(role: impl RoleName, client: usize, nodes: usize) -> String {
    let i = if client < CHECK_CLIENTS && nodes > 0 {
        client % nodes
    } else {
        client
    };
    Topology::node_name(role, i)
}

/// The history a run records, as the generic layer sees it.
pub trait RunHistory: Send + 'static {
    /// Pretty JSON (the `.history.json` file).
    fn to_json(&self) -> String;
    /// The trace hash (equal for two runs of one scenario).
    fn trace_hash(&self) -> u64;
    /// Operations recorded.
    fn ops(&self) -> usize;
    /// Operations recorded of the workload: those of clients below
    /// [`CHECK_CLIENTS`] (what a shrink minimises and the bug table counts).
    fn workload_ops(&self) -> usize;
    /// Operations whose outcome is unknown.
    fn unknown_ops(&self) -> usize;
    /// The largest history client number of the workload's operations
    /// (below [`CHECK_CLIENTS`]), if any.
    fn max_workload_client(&self) -> Option<usize>;
    /// Attempts beyond the first of each operation.
    fn retries(&self) -> usize;
    /// The operations counted as every line that speaks of them counts them.
    fn op_count(&self) -> crate::run::OpCount;
    /// The history as time-ordered lines (`TIME WHO: WHAT`), for saying
    /// where two runs that should agree diverge.
    fn trace_lines(&self) -> Vec<(u64, String)>;
    /// The history itself, for a scenario that draws its own type.
    fn as_any(&self) -> &dyn std::any::Any;
    /// Draws the operations and node events on a failure page, knowing
    /// nothing of the scenario: an operation of history client `c` on the
    /// lane `lane(c)` names (its node), labelled with its call's JSON,
    /// coloured by a `status` field of its result (2xx, 4xx, 5xx); node
    /// events as marks. A scenario draws its own with
    /// [`ScenarioDef::timeline`].
    fn draw_generic(&self, t: &mut Timeline, lane: &dyn Fn(usize) -> String);
    /// The history as it stood at simulated time `at_ns`: the operations
    /// invoked by then (those that returned later with an unknown outcome,
    /// without their later attempts) and the events up to then. Goals
    /// counted on it say what the run had reached by then
    /// ([`crate::goals::first_reached`]).
    fn until(&self, at_ns: u64) -> Box<dyn RunHistory>;
    /// Every simulated time something was recorded at (an invocation, a
    /// return, an event), ascending, once each: the moments a goal can
    /// first have been reached at.
    fn moments(&self) -> Vec<u64>;
}

impl<C, R, E, L> RunHistory for History<C, R, E, L>
where
    C: Serialize + Clone + Send + 'static,
    R: Serialize + Clone + Send + 'static,
    E: Serialize + Clone + Send + 'static,
    L: Serialize + Clone + Send + 'static,
{
    fn to_json(&self) -> String {
        History::to_json(self)
    }
    fn trace_hash(&self) -> u64 {
        History::trace_hash(self)
    }
    fn ops(&self) -> usize {
        self.ops.len()
    }
    fn workload_ops(&self) -> usize {
        self.ops.iter().filter(|o| o.client < CHECK_CLIENTS).count()
    }
    fn unknown_ops(&self) -> usize {
        self.ops.iter().filter(|o| o.result.is_none()).count()
    }
    fn max_workload_client(&self) -> Option<usize> {
        self.ops
            .iter()
            .map(|o| o.client)
            .filter(|c| *c < CHECK_CLIENTS)
            .max()
    }
    fn retries(&self) -> usize {
        self.ops
            .iter()
            .map(|o| o.attempts.len().saturating_sub(1))
            .sum()
    }
    fn op_count(&self) -> crate::run::OpCount {
        let mut n = crate::run::OpCount::default();
        for o in &self.ops {
            if o.client >= CHECK_CLIENTS {
                n.checks += 1;
                continue;
            }
            n.client += 1;
            n.unknown += usize::from(o.result.is_none());
            n.retries += o.attempts.len().saturating_sub(1);
        }
        n
    }
    fn trace_lines(&self) -> Vec<(u64, String)> {
        let json = |v: &dyn erased::Json| v.compact();
        let mut lines: Vec<(u64, String)> = Vec::new();
        for o in &self.ops {
            lines.push((
                o.invoke_ns,
                format!("client {} op {}: {}", o.client, o.id, json(o)),
            ));
        }
        for e in &self.events {
            lines.push((e.at_ns, format!("world: {}", e.what)));
        }
        for e in &self.node_events {
            lines.push((e.at_ns, format!("{}: {}", e.node, json(&e.event))));
        }
        lines.sort_by_key(|l| l.0);
        lines
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn until(&self, at_ns: u64) -> Box<dyn RunHistory> {
        let ops = self
            .ops
            .iter()
            .filter(|o| o.invoke_ns <= at_ns)
            .map(|o| {
                let mut o = o.clone();
                if o.return_ns.is_none_or(|r| r > at_ns) {
                    o.return_ns = None;
                    o.result = None;
                }
                o.attempts.retain(|a| a.sent_ns <= at_ns);
                o
            })
            .collect();
        Box::new(History {
            version: self.version,
            ops,
            events: self
                .events
                .iter()
                .filter(|e| e.at_ns <= at_ns)
                .cloned()
                .collect(),
            node_events: self
                .node_events
                .iter()
                .filter(|e| e.at_ns <= at_ns)
                .cloned()
                .collect(),
            log_events: self
                .log_events
                .iter()
                .filter(|e| e.at_ns <= at_ns)
                .cloned()
                .collect(),
        })
    }
    fn moments(&self) -> Vec<u64> {
        let mut times: Vec<u64> = self
            .ops
            .iter()
            .flat_map(|o| std::iter::once(o.invoke_ns).chain(o.return_ns))
            .chain(self.events.iter().map(|e| e.at_ns))
            .chain(self.node_events.iter().map(|e| e.at_ns))
            .collect();
        times.sort_unstable();
        times.dedup();
        times
    }
    fn draw_generic(&self, t: &mut Timeline, lane: &dyn Fn(usize) -> String) {
        let json = |v: &dyn erased::Json| v.words();
        t.add_ops(
            &self.ops,
            |o| lane(o.client),
            |o| {
                let tone = o
                    .result
                    .as_ref()
                    .and_then(|r| serde_json::to_value(r).ok())
                    .and_then(|v| v.get("status").and_then(|s| s.as_u64()))
                    .map_or(Tone::Neutral, status_tone);
                let result = o.result.as_ref().map_or("?".into(), |r| json(r));
                (format!("{} → {result}", json(&o.call)), tone)
            },
        );
        for e in &self.node_events {
            let value = serde_json::to_value(&e.event).unwrap_or_default();
            let kind = value
                .get("kind")
                .and_then(|k| k.as_str())
                .map_or_else(|| json(&e.event), str::to_string);
            t.marks.push(Mark {
                lane: node_lane(&e.node).to_string(),
                at_ns: e.at_ns,
                label: kind,
                detail: format!(
                    "{} at {} ({} on its clock): {}",
                    e.node,
                    secs(e.at_ns),
                    clock_secs(e.local_ms),
                    json(&e.event)
                ),
                kind: MarkKind::Event,
                highlight: false,
            });
        }
    }
}

/// The colour of an HTTP status: 2xx ok, 4xx refused by design, other errors.
pub fn status_tone(status: u64) -> Tone {
    match status {
        200..=299 => Tone::Ok,
        400..=499 => Tone::Refused,
        _ => Tone::Error,
    }
}

/// Compact JSON of any serialisable value, behind a trait object.
mod erased {
    /// A value that can be written as compact JSON.
    pub trait Json {
        /// The compact JSON text.
        fn compact(&self) -> String;
        /// The value in words ([`super::json_words`]).
        fn words(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn compact(&self) -> String {
            serde_json::to_string(self).unwrap_or_else(|e| format!("<{e}>"))
        }
        fn words(&self) -> String {
            super::json_words(&self.compact())
        }
    }
}

/// A serialised value in words, for a page drawn without a scenario's own
/// words: an object's fields in their order as `name value` (absent ones
/// left out), strings without quotes, lists joined by commas, a nested
/// object in brackets — `{"op":"upsert","item":"k0","body":null}` reads
/// `op upsert item k0`. `json` is the value's compact JSON.
pub fn json_words(json: &str) -> String {
    /// Reads one value from `s` at `*i`, in words.
    fn value(s: &[u8], i: &mut usize) -> String {
        skip(s, i);
        match s.get(*i) {
            Some(b'{') => {
                *i += 1;
                let mut fields = Vec::new();
                loop {
                    skip(s, i);
                    match s.get(*i) {
                        Some(b'}') | None => {
                            *i += 1;
                            break;
                        }
                        Some(b',') => *i += 1,
                        _ => {
                            let k = value(s, i);
                            skip(s, i);
                            *i += 1; // ':'
                            skip(s, i);
                            let nested = s.get(*i) == Some(&b'{');
                            let v = value(s, i);
                            if v.is_empty() {
                                continue;
                            }
                            fields.push(if nested {
                                format!("{k} ({v})")
                            } else {
                                format!("{k} {v}")
                            });
                        }
                    }
                }
                fields.join(" ")
            }
            Some(b'[') => {
                *i += 1;
                let mut items = Vec::new();
                loop {
                    skip(s, i);
                    match s.get(*i) {
                        Some(b']') | None => {
                            *i += 1;
                            break;
                        }
                        Some(b',') => *i += 1,
                        _ => items.push(value(s, i)),
                    }
                }
                items.join(",")
            }
            Some(b'"') => {
                let start = *i;
                *i += 1;
                while *i < s.len() && s[*i] != b'"' {
                    *i += if s[*i] == b'\\' { 2 } else { 1 };
                }
                *i += 1;
                let text = std::str::from_utf8(&s[start..(*i).min(s.len())]).unwrap_or("");
                serde_json::from_str::<String>(text).unwrap_or_else(|_| text.to_string())
            }
            _ => {
                let start = *i;
                while *i < s.len() && !matches!(s[*i], b',' | b'}' | b']') {
                    *i += 1;
                }
                let word = String::from_utf8_lossy(&s[start..*i]).trim().to_string();
                if word == "null" {
                    String::new()
                } else {
                    word
                }
            }
        }
    }
    fn skip(s: &[u8], i: &mut usize) {
        while *i < s.len() && s[*i].is_ascii_whitespace() {
            *i += 1;
        }
    }
    value(json.as_bytes(), &mut 0)
}

/// A scenario: its parameters, topology, node programs, checkers, seeded
/// bugs and shrink reductions.
pub trait ScenarioDef: Send + Sync + 'static {
    /// Its own parameters (serde; unknown fields must be rejected with
    /// `#[serde(deny_unknown_fields)]`).
    type Params: Serialize + DeserializeOwned + Clone + Debug + PartialEq + Send + Sync + 'static;
    /// The history its nodes record (read back from its file by
    /// `overcast check`, so it deserialises too).
    type History: RunHistory + DeserializeOwned;

    /// The name used on the command line and in files.
    fn name(&self) -> &'static str;
    /// One line for the run header and `--help`.
    fn describe(&self) -> &'static str;
    /// The default parameters for `seed`.
    fn params(&self, seed: u64) -> Self::Params;
    /// The default envelope settings (faults, durations).
    fn defaults(&self) -> RunDefaults;
    /// Generated parameters, shrinking towards small ones.
    fn strategy(&self) -> BoxedStrategy<Self::Params>;
    /// Checks that the values make sense; one line when they do not.
    fn validate(&self, p: &Self::Params) -> Result<(), ParamError>;
    /// The parameters in one line for the run header.
    fn header(&self, p: &Self::Params) -> String;
    /// The nodes.
    fn topology(&self, p: &Self::Params) -> Topology;
    /// The role whose nodes issue the history's operations and how many
    /// nodes have it, so that a failure page draws history client `c` on
    /// its node's lane ([`client_node`]). Default: the role `client` of
    /// [`ScenarioDef::topology`].
    fn client_role(&self, p: &Self::Params) -> (&'static str, usize) {
        let nodes = self
            .topology(p)
            .roles
            .iter()
            .find(|r| r.name == "client")
            .map_or(0, |r| r.count);
        ("client", nodes)
    }
    /// What its deployment promises to tolerate; drawn plans stay within
    /// it unless the run is beyond budget. Default: every fault its mix
    /// draws, unbounded.
    fn budget(&self) -> FaultBudget {
        FaultBudget::unbounded("every fault its mix draws")
    }
    /// The seeded bugs that belong to it. Default: none.
    fn bugs(&self) -> Vec<&'static BugInfo> {
        Vec::new()
    }
    /// The variant these parameters make of the scenario, when they make one
    /// that its name and seed do not say (occ's throttling run): its command
    /// line then says `--NAME` and its saved file's name `-NAME`, or a rerun
    /// would run the plain scenario. Default: none.
    fn variant(&self, _p: &Self::Params) -> Option<&'static str> {
        None
    }
    /// The fault profile (a name of [`overcast_sim::faults::FaultMix::PROFILES`])
    /// the bug hunt runs `bug` under, for a bug that only shows under more
    /// faults of one kind than the default mix draws. Default: `default`.
    fn hunt_profile(&self, _bug: &str) -> &'static str {
        "default"
    }
    /// Its node programs for one run.
    fn deploy(&self, p: &Self::Params, ctx: &RunCtx) -> Deployment<Self::History>;
    /// Its checkers, in the order the summary lists them.
    fn checkers(&self, p: &Self::Params) -> Vec<Box<dyn Checker<Self::History>>>;
    /// Its shrink reductions on parameters, most powerful first.
    fn reductions(&self) -> Vec<Reduction<Self::Params>>;
    /// The largest values of its size parameters: a run beyond them is not
    /// one the scenario was built for (it takes minutes, or its checks give
    /// up). Checked before [`ScenarioDef::validate`], for saved files too;
    /// `overcast list` shows them. Default: none.
    fn limits(&self) -> &'static [SizeLimit] {
        &[]
    }
    /// Whether a violation of `property` stays one in every longer run: it
    /// is judged on what happened before it (no liveness, nothing about the
    /// end state or how long the run went on), so the shrinker may cut the
    /// quiet phase short when that is the property a failure breaks.
    /// Default: no property.
    fn prefix_closed(&self, _property: PropertyId) -> bool {
        false
    }
    /// Whether the check of `property` states the quiet phase it needs
    /// (its premise: so long after the last fault, write or left-out call)
    /// and does not judge a run whose quiet phase falls short of it: such a
    /// run never breaks it for want of time, so the shrinker may cut the
    /// quiet phase short and leave out calls of it when that is the
    /// property a failure breaks, as for a prefix-closed one. Default: no
    /// property.
    fn judges_its_premise(&self, _property: PropertyId) -> bool {
        false
    }
    /// Why the awaited nodes of the run that recorded `h` could not finish
    /// whatever they did, if they could not (its server refused service,
    /// every copy of its log corrupt). In a run past the fault budget the
    /// liveness check then judges nothing and says why: the damage was
    /// detected and refused, which is that run's expected end. Within the
    /// budget it changes nothing. Default: never.
    fn cannot_finish(&self, _p: &Self::Params, _h: &Self::History) -> Option<String> {
        None
    }
    /// Reshapes the resolved fault plan before the world runs (e.g. keeps the
    /// clocks within a bound the scenario's clients state). Called on every
    /// run, drawn or saved plan alike, so replays agree. Default: unchanged.
    fn adjust_plan(&self, _p: &Self::Params, _plan: &mut overcast_sim::faults::FaultPlan) {}
    /// Draws a failing run's operations and the scenario's own events on its
    /// page ([`crate::report`]); the world's part (node lanes, faults, clocks)
    /// and the violation's words are drawn already, and `t.highlight` holds
    /// the operations the violations name. Default: [`RunHistory::draw_generic`],
    /// each operation on its node's lane ([`ScenarioDef::client_role`]).
    fn timeline(&self, p: &Self::Params, h: &Self::History, t: &mut Timeline) {
        let (role, nodes) = self.client_role(p);
        h.draw_generic(t, &|c| client_node(role, c, nodes));
    }
    /// Its reachability goals ([`crate::goals`]): states its runs should
    /// sometimes reach, each counted on a finished history, in the order a
    /// sweep lists them. Default: none.
    fn goals(&self, _p: &Self::Params) -> Vec<crate::goals::Goal<Self::History>> {
        Vec::new()
    }
    /// The SPEC tables its coverage counts ([`crate::coverage`]), and how a
    /// history's operations are counted in them. Default: none (`--coverage`
    /// is refused).
    fn coverage(&self) -> Option<CoverageOf<Self::History>> {
        None
    }
}

/// A scenario's coverage capability: its tables, and the counts of one history.
pub struct CoverageOf<H> {
    /// The tables counted.
    pub tables: crate::coverage::Tables,
    /// The counts of one history.
    pub count: fn(&H) -> crate::coverage::Coverage,
}

/// One checker's result in a run.
#[derive(Clone, Debug)]
pub struct CheckRecord {
    /// The properties it judges; the first names it.
    pub properties: &'static [Property],
    /// What tells it from another checker of the same properties
    /// ([`overcast_sim::check::Checker::label`]; empty for none).
    pub label: &'static str,
    /// What it found.
    pub checked: Checked,
}

impl CheckRecord {
    /// The property that names the checker: its first.
    pub fn name(&self) -> PropertyId {
        self.properties[0].id
    }

    /// Its name in the summary and on the page: its properties
    /// ([`crate::run::property_range`]), then its label in brackets when it
    /// has one (`R1–R3 (servers)`).
    pub fn title(&self) -> String {
        let range = crate::run::property_range(self.properties);
        if self.label.is_empty() {
            range
        } else {
            format!("{range} ({})", self.label)
        }
    }

    /// Whether it judges `property`.
    pub fn judges(&self, property: PropertyId) -> bool {
        self.properties.iter().any(|p| p.id == property)
    }
}

/// What running a scenario's world and checks gives the generic layer.
pub struct Executed {
    /// The history.
    pub history: Box<dyn RunHistory>,
    /// What the world did.
    pub world: WorldOutcome,
    /// The model's own counters of injected faults.
    pub counters: BTreeMap<String, u64>,
    /// Each checker's result, in order.
    pub checks: Vec<CheckRecord>,
    /// Wall time of the checks alone.
    pub check_wall: std::time::Duration,
    /// When each client node's operations started ([`crate::ops`]).
    pub drawn: crate::ops::Drawn,
    /// What each of those operations was about ([`crate::ops::about`]).
    pub subjects: crate::ops::Subjects,
    /// [`ScenarioDef::cannot_finish`] of the history.
    pub cannot_finish: Option<String>,
}

/// A scenario with its parameters as JSON: what the runner, the shrinker,
/// the bug hunt and the CLI work with. Every [`ScenarioDef`] is one.
pub trait DynScenario: Send + Sync {
    /// [`ScenarioDef::name`].
    fn name(&self) -> &'static str;
    /// [`ScenarioDef::describe`].
    fn describe(&self) -> &'static str;
    /// The default parameters for `seed`, as JSON.
    fn default_params(&self, seed: u64) -> serde_json::Value;
    /// [`ScenarioDef::defaults`].
    fn defaults(&self) -> RunDefaults;
    /// Parses and validates parameters; one line when they are wrong.
    fn check_params(&self, params: &serde_json::Value) -> Result<(), HarnessError>;
    /// The parameters in one line for the run header.
    fn header(&self, params: &serde_json::Value) -> String;
    /// The nodes for these parameters.
    fn topology(&self, params: &serde_json::Value) -> Result<Topology, HarnessError>;
    /// [`ScenarioDef::budget`].
    fn budget(&self) -> FaultBudget;
    /// [`ScenarioDef::bugs`].
    fn bugs(&self) -> Vec<&'static BugInfo>;
    /// [`ScenarioDef::hunt_profile`].
    fn hunt_profile(&self, bug: &str) -> &'static str;
    /// [`ScenarioDef::variant`] (none for parameters that do not parse).
    fn variant(&self, params: &serde_json::Value) -> Option<&'static str>;
    /// Runs the world for `s` (whose plan is resolved) and checks its history.
    fn execute(&self, s: &Scenario) -> Result<Executed, HarnessError>;
    /// The names of its reductions.
    fn reduction_names(&self) -> Vec<&'static str>;
    /// [`ScenarioDef::prefix_closed`].
    fn prefix_closed(&self, property: PropertyId) -> bool;
    /// [`ScenarioDef::judges_its_premise`].
    fn judges_its_premise(&self, property: PropertyId) -> bool;
    /// Whether a failure of `property` may lose part of its quiet phase
    /// in a shrink: it is prefix-closed or judges its premise.
    fn quiet_phase_cuttable(&self, property: PropertyId) -> bool {
        self.prefix_closed(property) || self.judges_its_premise(property)
    }
    /// The `i`-th candidate of reduction `r` on these parameters.
    fn reduce(&self, params: &serde_json::Value, r: usize, i: usize) -> Option<serde_json::Value>;
    /// Generated scenarios (parameters, seed and swarm switch).
    fn strategy(&'static self) -> BoxedStrategy<Scenario>;
    /// [`ScenarioDef::limits`].
    fn limits(&self) -> &'static [SizeLimit];
    /// The properties its checkers judge with the default parameters of
    /// seed 0, in checker order, each once, then [`LIVENESS`] (which every
    /// run judges).
    fn properties(&self) -> Vec<Property>;
    /// Reads a history of this scenario from its JSON (the `.history.json`
    /// file without the run it came from); one line when it is not one.
    fn read_history(&self, doc: serde_json::Value) -> Result<Box<dyn RunHistory>, HarnessError>;
    /// Judges a history this scenario recorded (as [`DynScenario::read_history`]
    /// reads it) with its checkers for `params`: one record per checker, in
    /// order (liveness, judged on the world, is not among them).
    fn check_history(
        &self,
        history: &dyn RunHistory,
        params: &serde_json::Value,
    ) -> Result<Vec<CheckRecord>, HarnessError>;
    /// Draws run `s` (whose plan is resolved) on `t`: what the world did
    /// (its topology, the plan as [`ScenarioDef::adjust_plan`] shaped it,
    /// `world`'s events) and the history ([`ScenarioDef::timeline`]; the
    /// generic drawing for a history of another type).
    fn draw(
        &self,
        s: &Scenario,
        history: &dyn RunHistory,
        world: &WorldOutcome,
        t: &mut Timeline,
    ) -> Result<(), HarnessError>;
    /// [`ScenarioDef::goals`] for these parameters, over any history.
    fn goals(&self, params: &serde_json::Value)
        -> Result<Vec<crate::goals::DynGoal>, HarnessError>;
    /// The tables of [`ScenarioDef::coverage`], if it has them.
    fn coverage_tables(&self) -> Option<crate::coverage::Tables>;
    /// [`ScenarioDef::coverage`]'s counts of `history` (`None`: no tables,
    /// or a history of another scenario).
    fn coverage_of(&self, history: &dyn RunHistory) -> Option<crate::coverage::Coverage>;
}

fn parse<T: DeserializeOwned>(name: &str, v: &serde_json::Value) -> Result<T, HarnessError> {
    T::deserialize(v).map_err(|e| {
        HarnessError::invalid(format!(
            "the parameters of scenario '{name}' are not valid: {e}"
        ))
    })
}

/// Each of `def`'s checkers for `p` on `history`, in order.
fn judge<D: ScenarioDef>(def: &D, p: &D::Params, history: &D::History) -> Vec<CheckRecord> {
    def.checkers(p)
        .iter()
        .map(|c| CheckRecord {
            properties: c.properties(),
            label: c.label(),
            checked: c.check(history),
        })
        .collect()
}

fn to_value<T: Serialize>(t: &T) -> serde_json::Value {
    serde_json::to_value(t).expect("parameters serialise")
}

impl<D: ScenarioDef> DynScenario for D {
    fn name(&self) -> &'static str {
        ScenarioDef::name(self)
    }
    fn describe(&self) -> &'static str {
        ScenarioDef::describe(self)
    }
    fn default_params(&self, seed: u64) -> serde_json::Value {
        to_value(&self.params(seed))
    }
    fn defaults(&self) -> RunDefaults {
        ScenarioDef::defaults(self)
    }
    fn check_params(&self, params: &serde_json::Value) -> Result<(), HarnessError> {
        let p: D::Params = parse(ScenarioDef::name(self), params)?;
        check_limits(ScenarioDef::name(self), ScenarioDef::limits(self), params)?;
        Ok(self.validate(&p)?)
    }
    fn header(&self, params: &serde_json::Value) -> String {
        match parse::<D::Params>(ScenarioDef::name(self), params) {
            Ok(p) => ScenarioDef::header(self, &p),
            Err(e) => e.to_string(),
        }
    }
    fn topology(&self, params: &serde_json::Value) -> Result<Topology, HarnessError> {
        Ok(ScenarioDef::topology(
            self,
            &parse(ScenarioDef::name(self), params)?,
        ))
    }
    fn budget(&self) -> FaultBudget {
        ScenarioDef::budget(self)
    }
    fn bugs(&self) -> Vec<&'static BugInfo> {
        ScenarioDef::bugs(self)
    }
    fn hunt_profile(&self, bug: &str) -> &'static str {
        ScenarioDef::hunt_profile(self, bug)
    }
    fn variant(&self, params: &serde_json::Value) -> Option<&'static str> {
        ScenarioDef::variant(self, &parse(ScenarioDef::name(self), params).ok()?)
    }
    fn execute(&self, s: &Scenario) -> Result<Executed, HarnessError> {
        let p: D::Params = parse(ScenarioDef::name(self), &s.params)?;
        let ctx = RunCtx {
            seed: s.seed,
            bugs: s.bugs.clone(),
        };
        let topology = ScenarioDef::topology(self, &p);
        let mut cfg = crate::run::world_config(s, topology);
        ScenarioDef::adjust_plan(self, &p, &mut cfg.plan);
        let deployment = self.deploy(&p, &ctx);
        cfg.resolver = deployment.resolver;
        let program = deployment.program;
        let plan = crate::ops::OpPlan::install(&s.skip, &s.reached, &s.pace);
        let world = overcast_sim::world::run_world(&cfg, program);
        let (drawn, subjects) = plan.finish();
        let (history, counters) = (deployment.collect)(&world);
        let started = std::time::Instant::now();
        let checks = judge(self, &p, &history);
        let cannot_finish = ScenarioDef::cannot_finish(self, &p, &history);
        Ok(Executed {
            history: Box::new(history),
            world,
            counters,
            checks,
            check_wall: started.elapsed(),
            drawn,
            subjects,
            cannot_finish,
        })
    }
    fn reduction_names(&self) -> Vec<&'static str> {
        self.reductions().iter().map(|r| r.0).collect()
    }
    fn prefix_closed(&self, property: PropertyId) -> bool {
        ScenarioDef::prefix_closed(self, property)
    }
    fn judges_its_premise(&self, property: PropertyId) -> bool {
        ScenarioDef::judges_its_premise(self, property)
    }
    fn reduce(&self, params: &serde_json::Value, r: usize, i: usize) -> Option<serde_json::Value> {
        let p: D::Params = parse(ScenarioDef::name(self), params).ok()?;
        let reductions = self.reductions();
        (reductions.get(r)?.1)(&p, i).map(|q| to_value(&q))
    }
    fn limits(&self) -> &'static [SizeLimit] {
        ScenarioDef::limits(self)
    }
    fn properties(&self) -> Vec<Property> {
        let mut all: Vec<Property> = Vec::new();
        for c in self.checkers(&self.params(0)) {
            for p in c.properties() {
                if !all.iter().any(|a| a.id == p.id) {
                    all.push(*p);
                }
            }
        }
        if !all.iter().any(|a| a.id == LIVENESS.id) {
            all.push(LIVENESS);
        }
        all
    }
    fn read_history(&self, doc: serde_json::Value) -> Result<Box<dyn RunHistory>, HarnessError> {
        let h: D::History = serde_path_to_error::deserialize(doc).map_err(|e| {
            format!(
                "not a history of scenario '{}': {}: {}",
                ScenarioDef::name(self),
                e.path(),
                e.inner()
            )
        })?;
        Ok(Box::new(h))
    }
    fn check_history(
        &self,
        history: &dyn RunHistory,
        params: &serde_json::Value,
    ) -> Result<Vec<CheckRecord>, HarnessError> {
        let p: D::Params = parse(ScenarioDef::name(self), params)?;
        let h = history
            .as_any()
            .downcast_ref::<D::History>()
            .ok_or_else(|| format!("not a history of scenario '{}'", ScenarioDef::name(self)))?;
        Ok(judge(self, &p, h))
    }
    fn draw(
        &self,
        s: &Scenario,
        history: &dyn RunHistory,
        world: &WorldOutcome,
        t: &mut Timeline,
    ) -> Result<(), HarnessError> {
        let p: D::Params = parse(ScenarioDef::name(self), &s.params)?;
        let topology = ScenarioDef::topology(self, &p);
        let mut plan = s
            .plan
            .clone()
            .unwrap_or_else(|| crate::run::resolve_plan(s, &topology));
        ScenarioDef::adjust_plan(self, &p, &mut plan);
        let mut lost: BTreeMap<String, usize> = BTreeMap::new();
        for (node, _) in &world.lost_writes {
            *lost.entry(node.clone()).or_default() += 1;
        }
        t.add_world(&topology, &plan, &world.events, &lost);
        // The checkers' words name history clients ("client 22"); the page
        // draws nodes. Say how one becomes the other when a client restarted.
        let (role, nodes) = ScenarioDef::client_role(self, &p);
        if let Some(c) = history
            .max_workload_client()
            .filter(|c| nodes > 0 && *c >= nodes)
        {
            t.facts.push((
                "clients".into(),
                format!(
                    "a restarted {role} is a new client to the checkers: their client n is node {role}-(n mod {nodes}) in its life n div {nodes} + 1 (client {c} is {} in life {})",
                    client_node(role, c, nodes),
                    c / nodes + 1,
                ),
            ));
        }
        match history.as_any().downcast_ref::<D::History>() {
            Some(h) => ScenarioDef::timeline(self, &p, h, t),
            None => history.draw_generic(t, &|c| client_node("client", c, 0)),
        }
        Ok(())
    }
    fn goals(
        &self,
        params: &serde_json::Value,
    ) -> Result<Vec<crate::goals::DynGoal>, HarnessError> {
        let p: D::Params = parse(ScenarioDef::name(self), params)?;
        Ok(ScenarioDef::goals(self, &p)
            .into_iter()
            .map(crate::goals::erase)
            .collect())
    }
    fn coverage_tables(&self) -> Option<crate::coverage::Tables> {
        ScenarioDef::coverage(self).map(|c| c.tables)
    }
    fn coverage_of(&self, history: &dyn RunHistory) -> Option<crate::coverage::Coverage> {
        let c = ScenarioDef::coverage(self)?;
        history.as_any().downcast_ref::<D::History>().map(c.count)
    }
    fn strategy(&'static self) -> BoxedStrategy<Scenario> {
        (ScenarioDef::strategy(self), any::<u64>(), any::<bool>())
            .prop_map(move |(p, seed, swarm)| {
                let mut s = Scenario::new(self, seed);
                s.params = to_value(&p);
                s.swarm = swarm;
                s
            })
            .boxed()
    }
}
