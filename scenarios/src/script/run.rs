//! The script runner: one fresh deployment per script on its own madsim
//! runtime, through the real path (SDK → wire → server → write-ahead log on a
//! simulated disk). Three nodes: the server; a relay that forwards requests
//! and replies between client and server unchanged (and loses one reply when
//! a `drop_next_reply` step asks); the scripted client, which runs the steps
//! in order and can crash and restart the server. No faults unless a step asks.
//!
//! The server's clock is [`ScriptClock`]: simulated time plus an offset that
//! `advance` steps move, starting at the simulation epoch
//! (Thu, 01 Jan 2026 00:00:00 GMT). Simulated time also passes while requests
//! travel (1 ms a hop) and the log syncs (1 ms), so dates should be pinned by
//! captures and whole-second offsets, not by milliseconds.

use super::format::{
    etag_tokens, BlobOp, Captured, Compare, DateExpr, Expect, Field, Script, Step,
};
use super::time::{format_rfc1123, parse_duration};
use crate::bridge::DiskAdapter;
use madsim::net::Endpoint;
use madsim::runtime::{Handle, Runtime};
use madsim::time::sleep;
use overcast_model::bugs::ModelBugs;
use overcast_model::client::{ClientConfig, StoreClient};
use overcast_model::conditions::{Conditions, ETag, EtagMatch, Millis};
use overcast_model::env::Clock;
use overcast_model::partition::{Request, Response};
use overcast_model::retry::{FinalOutcome, RetryOptions};
use overcast_model::server::{serve, FaultRates, ServerConfig, ServerStats};
use overcast_model::store::{ItemKey, StoreRequest, StoreResponse};
use overcast_model::wire::{MAX_DATAGRAM, REQUEST_TAG, RESPONSE_TAG};
use overcast_sim::clock::EPOCH_MS;
use overcast_sim::disk::SimDisk;
use overcast_sim::rng::stream;
use overcast_sim::world::{Role, Topology};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A clock the script moves: simulated time since the start, plus the
/// simulation epoch, plus an offset that `advance` steps add to.
#[derive(Clone, Debug, Default)]
pub struct ScriptClock {
    offset_ms: Arc<AtomicI64>,
}

impl ScriptClock {
    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: i64) {
        self.offset_ms.fetch_add(ms, Ordering::Relaxed);
    }
}

impl Clock for ScriptClock {
    fn now_ms(&self) -> Millis {
        let elapsed = madsim::time::TimeHandle::try_current()
            .map(|t| t.elapsed().as_millis() as i64)
            .unwrap_or(0);
        (EPOCH_MS as i64 + elapsed + self.offset_ms.load(Ordering::Relaxed)).max(0) as Millis
    }
}

/// The first step whose answer differs from the expectation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// The step, 1-based.
    pub step: usize,
    /// The request as sent (captured names replaced by their values).
    pub request: String,
    /// What the script expected.
    pub expected: String,
    /// What came back.
    pub got: String,
    /// Which part of the expectation failed.
    pub why: String,
}

/// How a script ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum ScriptOutcome {
    /// Every step answered as expected.
    Passed {
        /// Steps run.
        steps: usize,
        /// Times the server was restarted (by `crash_server` steps).
        restarts: u32,
        /// Log records the server replayed over all its restarts.
        replayed: u64,
    },
    /// A step's answer differs; the steps after it did not run.
    Differs(Difference),
    /// The run itself failed (it never finished: a harness error).
    Error {
        /// What went wrong.
        message: String,
    },
}

impl ScriptOutcome {
    /// True for [`ScriptOutcome::Passed`].
    pub fn passed(&self) -> bool {
        matches!(self, ScriptOutcome::Passed { .. })
    }
}

/// The longest a script may run in simulated time (a hung run is an error).
const RUN_BOUND: Duration = Duration::from_secs(24 * 3600);

/// Runs a parsed script on a fresh deployment, deterministically for `seed`
/// (the seed only moves what the script does not pin: network latency within
/// its 1 ms bound and the SDK's jitter).
pub fn run_script(script: &Script, seed: u64) -> ScriptOutcome {
    let mut config = madsim::Config::default();
    config.net.packet_loss_rate = 0.0;
    config.net.send_latency = Duration::from_millis(1)..Duration::from_millis(2);
    let rt = Runtime::with_seed_and_config(seed, config);
    let topo = Topology::new(vec![
        Role::new("server", 1).with_disk(),
        Role::new("relay", 1),
        Role::new("client", 1),
    ]);
    let addr = |role: &str| topo.addr(role, 0).expect("role in the topology");
    let (server_addr, relay_addr, client_addr) = (addr("server"), addr("relay"), addr("client"));
    let mut bugs = ModelBugs::default();
    for b in &script.bugs {
        bugs.set(b);
    }
    let server_clock = ScriptClock::default();
    let disk = SimDisk::new();
    let drop_next = Arc::new(AtomicBool::new(false));
    let result: Arc<Mutex<Option<ScriptOutcome>>> = Arc::new(Mutex::new(None));
    let stats = Arc::new(Mutex::new(ServerStats::default()));
    let incarnations = Arc::new(AtomicU32::new(0));

    let server = {
        let cfg = ServerConfig {
            bind: server_addr,
            containers: script.containers.clone(),
            faults: FaultRates::default(),
            fsync_ms: (1, 1),
            bugs,
            send: Default::default(),
            quiet_after_restart: Duration::ZERO,
        };
        let clock = server_clock.clone();
        let disk = disk.clone();
        let incarnations = incarnations.clone();
        let stats = stats.clone();
        rt.create_node()
            .name("server-0")
            .ip(server_addr.ip())
            .init(move || {
                let n = incarnations.fetch_add(1, Ordering::Relaxed);
                serve(
                    cfg.clone(),
                    Arc::new(clock.clone()),
                    Arc::new(DiskAdapter(disk.clone())),
                    Box::new(stream(seed, &format!("script-server-{n}"))),
                    stats.clone(),
                )
            })
            .build()
    };
    let relay = {
        let drop_next = drop_next.clone();
        rt.create_node()
            .name("relay-0")
            .ip(relay_addr.ip())
            .init(move || relay_program(relay_addr, server_addr, drop_next.clone()))
            .build()
    };
    let server_id = server.id();
    let client = {
        let script = script.clone();
        let result = result.clone();
        let ctx = RunCtx {
            relay: relay_addr,
            server_clock: server_clock.clone(),
            client_clock: ScriptClock::default(),
            disk: disk.clone(),
            drop_next: drop_next.clone(),
            server_id,
            bugs,
            seed,
        };
        rt.create_node()
            .name("client-0")
            .ip(client_addr.ip())
            .init(move || {
                let script = script.clone();
                let result = result.clone();
                let ctx = ctx.clone();
                async move {
                    let outcome = run_steps(&script, &ctx).await;
                    *result.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
                }
            })
            .build()
    };
    let ids = [server_id, relay.id(), client.id()];
    let done = result.clone();
    rt.block_on(async move {
        let start = madsim::time::Instant::now();
        while done.lock().unwrap_or_else(|e| e.into_inner()).is_none()
            && start.elapsed() < RUN_BOUND
        {
            sleep(Duration::from_millis(100)).await;
        }
        let handle = Handle::current();
        for id in ids {
            handle.kill(id);
        }
    });
    drop(rt);
    let outcome = result.lock().unwrap_or_else(|e| e.into_inner()).take();
    let replayed = stats.lock().unwrap_or_else(|e| e.into_inner()).replayed;
    let restarts = incarnations.load(Ordering::Relaxed).saturating_sub(1);
    outcome
        .map(|o| match o {
            ScriptOutcome::Passed { steps, .. } => ScriptOutcome::Passed {
                steps,
                restarts,
                replayed,
            },
            other => other,
        })
        .unwrap_or_else(|| ScriptOutcome::Error {
            message: format!("the script did not finish within {RUN_BOUND:?} of simulated time"),
        })
}

/// Forwards requests to the server and replies to whoever sent the last
/// request, losing one reply when `drop_next` is set.
async fn relay_program(me: SocketAddr, server: SocketAddr, drop_next: Arc<AtomicBool>) {
    let Ok(ep) = Endpoint::bind(me).await else {
        tracing::error!("relay cannot bind {me}");
        return;
    };
    let ep = Arc::new(ep);
    let client: Arc<Mutex<Option<SocketAddr>>> = Arc::new(Mutex::new(None));
    let requests = {
        let ep = ep.clone();
        let client = client.clone();
        async move {
            let mut buf = vec![0u8; MAX_DATAGRAM];
            loop {
                let Ok((len, from)) = ep.recv_from(REQUEST_TAG, &mut buf).await else {
                    continue;
                };
                *client.lock().unwrap_or_else(|e| e.into_inner()) = Some(from);
                let _ = ep.send_to(server, REQUEST_TAG, &buf[..len]).await;
            }
        }
    };
    madsim::task::spawn(requests);
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let Ok((len, _)) = ep.recv_from(RESPONSE_TAG, &mut buf).await else {
            continue;
        };
        if drop_next.swap(false, Ordering::Relaxed) {
            tracing::info!("relay: reply dropped");
            continue;
        }
        let to = *client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(to) = to {
            let _ = ep.send_to(to, RESPONSE_TAG, &buf[..len]).await;
        }
    }
}

/// What the scripted client needs besides the script.
#[derive(Clone)]
struct RunCtx {
    relay: SocketAddr,
    server_clock: ScriptClock,
    /// The client's own clock; no Blob call reads it (see [`super::format::Advance`]).
    client_clock: ScriptClock,
    disk: SimDisk,
    drop_next: Arc<AtomicBool>,
    server_id: madsim::task::NodeId,
    bugs: ModelBugs,
    seed: u64,
}

/// What the runner keeps between steps.
#[derive(Default)]
struct State {
    captured: BTreeMap<String, Captured>,
    /// Every ETag seen per resource (`container/blob`), for `fresh`.
    seen: BTreeMap<String, BTreeSet<String>>,
}

/// One answer as the script sees it.
struct Answer {
    outcome: FinalOutcome,
    attempts: usize,
    response: Option<Response>,
}

impl Answer {
    fn status(&self) -> u16 {
        match self.outcome {
            FinalOutcome::Response { status } | FinalOutcome::Unknown { status } => status,
        }
    }

    fn unknown(&self) -> bool {
        matches!(self.outcome, FinalOutcome::Unknown { .. })
    }

    /// The store's answer (a new service's answer gets its own accessor).
    fn store(&self) -> Option<&StoreResponse> {
        match self.response.as_ref()? {
            Response::Store(r) => Some(r),
            _ => None,
        }
    }

    fn error_code(&self) -> Option<&str> {
        self.store().and_then(|r| r.error_code.as_deref())
    }

    fn item(&self) -> Option<&overcast_model::store::ItemView> {
        self.store().and_then(|r| r.item.as_ref())
    }

    fn describe(&self) -> String {
        let mut out = self.status().to_string();
        if self.unknown() {
            out += " (outcome unknown)";
        }
        if let Some(code) = self.error_code() {
            out += &format!(" {code}");
        }
        if let Some(item) = self.item() {
            out += &format!(
                ", etag {}, last_modified {}",
                item.etag,
                format_rfc1123(item.last_modified)
            );
            match &item.body {
                Some(b) => out += &format!(", body {b:?}"),
                None => out += ", no body",
            }
        }
        out += &format!(", {} attempt(s)", self.attempts);
        out
    }
}

async fn run_steps(script: &Script, ctx: &RunCtx) -> ScriptOutcome {
    let cfg = ClientConfig {
        servers: vec![ctx.relay],
        partitions: 1,
        retry: RetryOptions::default(),
        bugs: ctx.bugs,
        send: Default::default(),
    };
    let mut client =
        match StoreClient::connect(cfg, Box::new(stream(ctx.seed, "script-client"))).await {
            Ok(c) => c,
            Err(e) => {
                return ScriptOutcome::Error {
                    message: format!("the client could not bind: {e}"),
                }
            }
        };
    let mut state = State::default();
    for (i, step) in script.steps.iter().enumerate() {
        let n = i + 1;
        match step {
            Step::Advance(a) => {
                // Durations were validated with the script.
                if let Some(v) = &a.server {
                    ctx.server_clock.advance(parse_duration(v).unwrap_or(0));
                }
                if let Some(v) = &a.client {
                    ctx.client_clock.advance(parse_duration(v).unwrap_or(0));
                }
                continue;
            }
            Step::CrashServer(c) => {
                let handle = Handle::current();
                handle.kill(ctx.server_id);
                // A process crash: the OS keeps what was appended.
                ctx.disk
                    .crash(false, &mut stream(ctx.seed, &format!("script-crash-{n}")));
                let down = c
                    .down
                    .as_deref()
                    .map_or(0, |d| parse_duration(d).unwrap_or(0));
                if down > 0 {
                    sleep(Duration::from_millis(down as u64)).await;
                }
                handle.restart(ctx.server_id);
                // Let the restarted server replay its log and bind.
                sleep(Duration::from_millis(1)).await;
                continue;
            }
            Step::DropNextReply(_) => {
                ctx.drop_next.store(true, Ordering::Relaxed);
                continue;
            }
            _ => {}
        }
        let (request, resource) = match build_request(step, &state) {
            Ok(r) => r,
            Err(message) => {
                return ScriptOutcome::Error {
                    message: format!("step {n}: {message}"),
                }
            }
        };
        let described = describe_request(step, &request);
        let result = client.request(&request).await;
        let answer = Answer {
            outcome: result.outcome,
            attempts: result.attempts.len(),
            response: result.response,
        };
        let expect = step.expect().expect("a request step has an expectation");
        if let Err(why) = check(expect, &answer, &resource, &mut state) {
            return ScriptOutcome::Differs(Difference {
                step: n,
                request: described,
                expected: describe_expect(expect),
                got: answer.describe(),
                why,
            });
        }
        if let Some(item) = answer.item() {
            state
                .seen
                .entry(resource)
                .or_default()
                .insert(item.etag.unquoted().to_string());
        }
    }
    // The restart and replay counts are filled in by `run_script`.
    ScriptOutcome::Passed {
        steps: script.steps.len(),
        restarts: 0,
        replayed: 0,
    }
}

/// The blob key of a request step: the blob is its own partition key.
fn key(container: &str, blob: &str) -> ItemKey {
    ItemKey::new(container, blob, blob)
}

/// The request of a request step, and the resource it addresses (for `fresh`).
fn build_request(step: &Step, state: &State) -> Result<(Request, String), String> {
    let (store, resource) = match step {
        Step::CreateContainer(s) => (
            StoreRequest::CreateContainer {
                container: s.container.clone(),
            },
            s.container.clone(),
        ),
        Step::PutBlob(s) => (
            StoreRequest::Put {
                key: key(&s.container, &s.blob),
                body: s.body.clone().unwrap_or_default(),
                conditions: conditions(s, state)?,
            },
            format!("{}/{}", s.container, s.blob),
        ),
        Step::GetBlob(s) => (
            StoreRequest::Read {
                key: key(&s.container, &s.blob),
                conditions: conditions(s, state)?,
            },
            format!("{}/{}", s.container, s.blob),
        ),
        Step::DeleteBlob(s) => (
            StoreRequest::Delete {
                key: key(&s.container, &s.blob),
                conditions: conditions(s, state)?,
            },
            format!("{}/{}", s.container, s.blob),
        ),
        Step::Advance(_) | Step::CrashServer(_) | Step::DropNextReply(_) => {
            return Err("not a request".into())
        }
    };
    Ok((Request::Store(store), resource))
}

fn lookup<'a>(state: &'a State, name: &str) -> Result<&'a Captured, String> {
    state
        .captured
        .get(name)
        .ok_or_else(|| format!("{name} was never captured (its step's answer had no such field)"))
}

fn etag_header(v: &str, state: &State) -> Result<EtagMatch, String> {
    if v.trim() == "*" {
        return Ok(EtagMatch::Any);
    }
    etag_tokens(v)
        .into_iter()
        .map(|t| {
            if t.starts_with('$') {
                match lookup(state, t)? {
                    Captured::Etag(e) => Ok(ETag(e.clone())),
                    Captured::Time(_) => Err(format!("{t} holds a date")),
                }
            } else {
                Ok(ETag::quoted(t))
            }
        })
        .collect::<Result<_, _>>()
        .map(EtagMatch::Tags)
}

fn date(expr: &str, state: &State) -> Result<Millis, String> {
    let d = DateExpr::parse(expr)?;
    let base = match &d.var {
        Some(n) => match lookup(state, n)? {
            Captured::Time(t) => *t as i64,
            Captured::Etag(_) => return Err(format!("{n} holds an ETag")),
        },
        None => d.fixed as i64,
    };
    Ok((base + d.offset_ms).max(0) as Millis)
}

fn conditions(h: &BlobOp, state: &State) -> Result<Conditions, String> {
    let dates = |d: &Option<super::format::Dates>| -> Result<Option<Vec<Millis>>, String> {
        d.as_ref()
            .map(|d| d.exprs().into_iter().map(|e| date(e, state)).collect())
            .transpose()
    };
    Ok(Conditions {
        if_match: h
            .if_match
            .as_deref()
            .map(|v| etag_header(v, state))
            .transpose()?,
        if_none_match: h
            .if_none_match
            .as_deref()
            .map(|v| etag_header(v, state))
            .transpose()?,
        if_modified_since: dates(&h.if_modified_since)?,
        if_unmodified_since: dates(&h.if_unmodified_since)?,
        lease_id: None,
    })
}

/// The request as a line: the step's kind, the resource, and the headers
/// with captured names resolved.
fn describe_request(step: &Step, req: &Request) -> String {
    let mut out = step.kind().to_string();
    let Request::Store(req) = req else {
        return format!("{out} {req:?}");
    };
    match req {
        StoreRequest::CreateContainer { container } => return format!("{out} {container}"),
        StoreRequest::Read { key, .. } | StoreRequest::Delete { key, .. } => {
            out += &format!(" {}/{}", key.container, key.id)
        }
        StoreRequest::Put { key, body, .. } => {
            out += &format!(" {}/{} body {body:?}", key.container, key.id)
        }
    }
    let c = match req {
        StoreRequest::Read { conditions, .. }
        | StoreRequest::Put { conditions, .. }
        | StoreRequest::Delete { conditions, .. } => conditions,
        StoreRequest::CreateContainer { .. } => unreachable!("returned above"),
    };
    for (name, m) in [
        ("If-Match", &c.if_match),
        ("If-None-Match", &c.if_none_match),
    ] {
        match m {
            Some(EtagMatch::Any) => out += &format!(", {name}: *"),
            Some(EtagMatch::Tags(t)) => {
                let tags: Vec<&str> = t.iter().map(|e| e.0.as_str()).collect();
                out += &format!(", {name}: {}", tags.join(", "));
            }
            None => {}
        }
    }
    for (name, d) in [
        ("If-Modified-Since", &c.if_modified_since),
        ("If-Unmodified-Since", &c.if_unmodified_since),
    ] {
        if let Some(d) = d {
            let dates: Vec<String> = d.iter().map(|t| format_rfc1123(*t)).collect();
            out += &format!(", {name}: {}", dates.join(" | "));
        }
    }
    out
}

/// The expectation as a line.
fn describe_expect(e: &Expect) -> String {
    let mut parts = Vec::new();
    if let Some(s) = e.status {
        parts.push(s.to_string());
    }
    if let Some(c) = &e.error_code {
        parts.push(c.clone());
    }
    if let Some(u) = e.unknown_outcome {
        parts.push(
            if u {
                "outcome unknown"
            } else {
                "outcome known"
            }
            .into(),
        );
    }
    if let Some(a) = e.attempts {
        parts.push(format!("{a} attempt(s)"));
    }
    if let Some(v) = &e.etag {
        parts.push(format!("etag {v}"));
    }
    if let Some(v) = &e.last_modified {
        parts.push(format!("last_modified {v}"));
    }
    if let Some(b) = &e.body {
        parts.push(format!("body {b:?}"));
    }
    if e.no_body == Some(true) {
        parts.push("no body".into());
    }
    let mut out = parts.join(", ");
    if !e.any_of.is_empty() {
        let alts: Vec<String> = e.any_of.iter().map(describe_expect).collect();
        if !out.is_empty() {
            out += ", and ";
        }
        out += &format!("one of [{}]", alts.join(" | "));
    }
    if out.is_empty() {
        out = "anything".into();
    }
    out
}

/// Checks `answer` against `e`; on success binds the captures (the top
/// level's and the matching alternative's).
fn check(e: &Expect, answer: &Answer, resource: &str, state: &mut State) -> Result<(), String> {
    check_fields(e, answer, resource, state)?;
    if !e.any_of.is_empty() {
        let mut whys = Vec::new();
        let mut matched = None;
        for alt in &e.any_of {
            match check_fields(alt, answer, resource, state) {
                Ok(()) => {
                    matched = Some(alt);
                    break;
                }
                Err(why) => whys.push(why),
            }
        }
        let Some(alt) = matched else {
            return Err(format!("no alternative holds: {}", whys.join("; ")));
        };
        capture(alt, answer, state)?;
    }
    capture(e, answer, state)
}

fn capture(e: &Expect, answer: &Answer, state: &mut State) -> Result<(), String> {
    for (field, name) in &e.capture {
        let value = match (Field::parse(field), answer.item()) {
            (Some(Field::Etag), Some(item)) => Captured::Etag(item.etag.0.clone()),
            (Some(Field::LastModified), Some(item)) => Captured::Time(item.last_modified),
            _ => return Err(format!("capture {name}: the answer has no {field}")),
        };
        state.captured.insert(name.clone(), value);
    }
    Ok(())
}

fn check_fields(e: &Expect, a: &Answer, resource: &str, state: &State) -> Result<(), String> {
    if let Some(s) = e.status {
        if a.status() != s {
            return Err(format!("status {} is not {s}", a.status()));
        }
    }
    let code = a.error_code();
    if let Some(c) = &e.error_code {
        if code != Some(c.as_str()) {
            return Err(format!(
                "error code {} is not {c}",
                code.unwrap_or("(none)")
            ));
        }
    }
    if let Some(u) = e.unknown_outcome {
        if a.unknown() != u {
            return Err(format!(
                "the outcome is {}known",
                if a.unknown() { "un" } else { "" }
            ));
        }
    }
    if let Some(n) = e.attempts {
        if a.attempts != n {
            return Err(format!("{} attempt(s), not {n}", a.attempts));
        }
    }
    let item = a.item();
    if let Some(v) = &e.etag {
        let got = item.map(|i| &i.etag);
        let seen = state.seen.get(resource);
        let ok = match Compare::parse(v, Field::Etag)? {
            Compare::Fresh => got.is_some_and(|g| !seen.is_some_and(|s| s.contains(g.unquoted()))),
            Compare::SameAs(n) => got.is_some_and(|g| Some(g) == captured_etag(state, &n).as_ref()),
            Compare::DifferentFrom(n) => {
                got.is_some_and(|g| Some(g) != captured_etag(state, &n).as_ref())
            }
            Compare::Present => got.is_some(),
            Compare::Absent => got.is_none(),
            Compare::Literal(l) => got.is_some_and(|g| *g == ETag::quoted(&l)),
        };
        if !ok {
            let got = got.map_or("no etag".to_string(), |g| format!("etag {g}"));
            return Err(format!("{got} is not {v}"));
        }
    }
    if let Some(v) = &e.last_modified {
        // Last-Modified is a date header: whole seconds.
        let got = item.map(|i| i.last_modified / 1000);
        let secs = |t: Millis| t / 1000;
        let ok = match Compare::parse(v, Field::LastModified)? {
            Compare::SameAs(n) => got.is_some() && got == captured_time(state, &n).map(secs),
            Compare::DifferentFrom(n) => got.is_some() && got != captured_time(state, &n).map(secs),
            Compare::Present => got.is_some(),
            Compare::Absent => got.is_none(),
            Compare::Literal(l) => got.is_some() && got == Some(secs(date(&l, state)?)),
            Compare::Fresh => false,
        };
        if !ok {
            let got = item.map_or("no last_modified".to_string(), |i| {
                format!("last_modified {}", format_rfc1123(i.last_modified))
            });
            return Err(format!("{got} is not {v}"));
        }
    }
    let body = item.and_then(|i| i.body.as_deref());
    if let Some(b) = &e.body {
        if body != Some(b.as_str()) {
            return Err(format!("body {body:?} is not {b:?}"));
        }
    }
    if let Some(no) = e.no_body {
        if body.is_none() != no {
            return Err(format!("body {body:?}"));
        }
    }
    Ok(())
}

fn captured_etag(state: &State, name: &str) -> Option<ETag> {
    match state.captured.get(name) {
        Some(Captured::Etag(e)) => Some(ETag(e.clone())),
        _ => None,
    }
}

fn captured_time(state: &State, name: &str) -> Option<Millis> {
    match state.captured.get(name) {
        Some(Captured::Time(t)) => Some(*t),
        _ => None,
    }
}
