//! A generator of kvhist/1-style histories that are linearizable by
//! construction: every operation gets a hidden linearization point inside its
//! interval, and the outputs are computed by replaying the operations in that
//! order. Optionally one guaranteed violation is injected late in the
//! history ([`Injection`]): a stale read, a phantom value or a lost write.

use super::kv::{KvInput, KvOutput, KvSpec, KvState, Val};
use super::Operation;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// What to generate.
#[derive(Clone, Debug)]
pub struct GenOptions {
    /// Seed of the ChaCha stream.
    pub seed: u64,
    /// Number of operations.
    pub ops: usize,
    /// Concurrent client threads (a thread whose operation times out goes on
    /// under a fresh client id).
    pub clients: usize,
    /// Number of keys (`k0`, `k1`, ...).
    pub keys: usize,
    /// Report versions in outputs and use `cput` (conditional put by version).
    pub versions: bool,
    /// Fraction of writes whose outcome is unknown (half of them take effect,
    /// at some instant after their invocation).
    pub unknown_writes: f64,
    /// Fraction of reads answered without a usable result.
    pub unknown_reads: f64,
    /// Operation durations are drawn from this range.
    pub duration: (i64, i64),
    /// Pause between a thread's operations.
    pub think: (i64, i64),
    /// Inject one stale read late in the history (a guaranteed violation).
    pub stale_read: bool,
    /// With versions: fraction of acknowledged puts whose output omits the
    /// version (their place in the version order must then be inferred).
    pub versionless_puts: f64,
    /// Without versions: the mix with conditional puts by version (get 50%,
    /// put 20%, cas 15%, cput 15%, as with versions) instead of get 50%,
    /// put 35%, cas 15%. The outputs still carry no version; the spec
    /// tracks versions, which the cputs compare.
    pub conditional_puts: bool,
    /// Inject one phantom value: a completed get past two thirds of the
    /// history returns a value no operation writes (a guaranteed violation).
    pub phantom_value: bool,
    /// Inject one lost write (a guaranteed violation): an acknowledged put
    /// past two thirds of the history never takes effect, and the outputs
    /// are computed without it. The put is one after which a completed get
    /// invoked after it returned would have been the first to see its
    /// value; without it, that get sees the value before it, which was
    /// already seen (written or read) by an operation that returned before
    /// the put was invoked, or the initial value.
    pub lost_write: bool,
}

impl Default for GenOptions {
    /// 100 ops, 4 clients, 1 key, versions, 1% unknown writes, durations
    /// 10..1000, think 0..100, no violation.
    fn default() -> Self {
        GenOptions {
            seed: 0,
            ops: 100,
            clients: 4,
            keys: 1,
            versions: true,
            unknown_writes: 0.01,
            unknown_reads: 0.0,
            duration: (10, 1000),
            think: (0, 100),
            stale_read: false,
            versionless_puts: 0.0,
            conditional_puts: false,
            phantom_value: false,
            lost_write: false,
        }
    }
}

/// A violation the generator injects (each is guaranteed to break
/// linearizability once placed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injection {
    /// [`GenOptions::stale_read`].
    StaleRead,
    /// [`GenOptions::phantom_value`].
    PhantomValue,
    /// [`GenOptions::lost_write`].
    LostWrite,
}

impl Injection {
    /// Every injection.
    pub const ALL: [Injection; 3] = [
        Injection::StaleRead,
        Injection::PhantomValue,
        Injection::LostWrite,
    ];

    /// Its name, in snake case.
    pub fn name(self) -> &'static str {
        match self {
            Injection::StaleRead => "stale_read",
            Injection::PhantomValue => "phantom_value",
            Injection::LostWrite => "lost_write",
        }
    }
}

impl GenOptions {
    /// These options with exactly `injection` asked for (`None`: no
    /// violation).
    pub fn with(self, injection: Option<Injection>) -> Self {
        GenOptions {
            stale_read: injection == Some(Injection::StaleRead),
            phantom_value: injection == Some(Injection::PhantomValue),
            lost_write: injection == Some(Injection::LostWrite),
            ..self
        }
    }
}

/// A generated history.
#[derive(Clone, Debug)]
pub struct Generated {
    /// The operations, by invocation time.
    pub ops: Vec<Operation<KvInput, KvOutput>>,
    /// The spec to check them against.
    pub spec: KvSpec,
    /// The id of the injected stale read, if one was asked for and could be
    /// placed (it needs two completed writes in sequence before a read).
    pub stale_read: Option<u64>,
    /// The id of the get returning the phantom value, or of the lost
    /// write (the put), if one was asked for and could be placed.
    pub injected: Option<u64>,
}

impl Generated {
    /// The id of the operation an injected violation was placed at (the
    /// stale read, the phantom value's get or the lost write), if any: the
    /// history is then not linearizable; otherwise it is.
    pub fn violation(&self) -> Option<u64> {
        self.stale_read.or(self.injected)
    }
}

struct Draft {
    client: u64,
    key: usize,
    input: KvInput,
    call: i64,
    ret: i64,
    /// Hidden linearization point; `None`: never takes effect.
    point: Option<i64>,
    unknown: bool,
    show_ret: bool,
    output: Option<KvOutput>,
    /// The version after it took effect (for writes that changed the state).
    produced: Option<(Val, u64)>,
}

/// Generates a history (deterministic in `opts`).
pub fn generate(opts: &GenOptions) -> Generated {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let nthreads = opts.clients.max(1);
    let mut t_next: Vec<i64> = (0..nthreads)
        .map(|_| rng.gen_range(0..=opts.think.1.max(0)))
        .collect();
    let mut client_of: Vec<u64> = (0..nthreads as u64).collect();
    let mut next_client = nthreads as u64;
    let mut counter = 0u64;
    let mut written: Vec<Vec<Val>> = vec![Vec::new(); opts.keys.max(1)];
    let mut drafts: Vec<Draft> = Vec::with_capacity(opts.ops);
    for _ in 0..opts.ops {
        let th = (0..nthreads).min_by_key(|&i| (t_next[i], i)).unwrap_or(0);
        let call = t_next[th];
        let dur = rng.gen_range(opts.duration.0..=opts.duration.1.max(opts.duration.0));
        let ret = call + dur;
        let key = rng.gen_range(0..opts.keys.max(1));
        counter += 1;
        let value: Val = Val::from(counter.to_string());
        let r: f64 = rng.gen();
        let nwrites = written[key].len() as u64;
        let cputs = opts.versions || opts.conditional_puts;
        let input = if r < 0.5 {
            KvInput::Get
        } else if r < 0.7 || (!cputs && r < 0.85) {
            KvInput::Put {
                value: value.clone(),
            }
        } else if r < 0.85 || !cputs {
            let w = &written[key];
            let expect = if w.is_empty() || rng.gen_bool(0.1) {
                None
            } else {
                Some(w[w.len() - 1 - rng.gen_range(0..w.len().min(3))].clone())
            };
            KvInput::Cas {
                expect,
                value: value.clone(),
            }
        } else {
            let ev = nwrites.saturating_sub(rng.gen_range(0..3));
            KvInput::Cput {
                expect_version: ev,
                value: value.clone(),
            }
        };
        if !matches!(input, KvInput::Get) {
            written[key].push(value);
        }
        let is_write = !matches!(input, KvInput::Get);
        let unknown = if is_write {
            rng.gen_bool(opts.unknown_writes.clamp(0.0, 1.0))
        } else {
            rng.gen_bool(opts.unknown_reads.clamp(0.0, 1.0))
        };
        let point = if unknown && is_write {
            if rng.gen_bool(0.5) {
                Some(call + rng.gen_range(0..=dur * 3))
            } else {
                None
            }
        } else {
            Some(rng.gen_range(call..=ret))
        };
        let show_ret = !unknown || !is_write || rng.gen_bool(0.5);
        drafts.push(Draft {
            client: client_of[th],
            key,
            input,
            call,
            ret,
            point,
            unknown,
            show_ret,
            output: None,
            produced: None,
        });
        t_next[th] = ret + 1 + rng.gen_range(opts.think.0..=opts.think.1.max(opts.think.0));
        if unknown && is_write {
            client_of[th] = next_client; // the client crashed; a fresh one goes on
            next_client += 1;
        }
    }
    // Replay in linearization-point order.
    let mut order: Vec<usize> = (0..drafts.len())
        .filter(|&i| drafts[i].point.is_some())
        .collect();
    order.sort_by_key(|&i| (drafts[i].point, i));
    let nd = drafts.len();
    let late = |d: &Draft, i: usize| i * 3 >= nd * 2 && !d.unknown;
    let lost = if opts.lost_write {
        lose_a_write(&mut drafts, &order, opts.keys.max(1))
    } else {
        None
    };
    let mut states: Vec<KvState> = vec![
        KvState {
            value: None,
            version: 0
        };
        opts.keys.max(1)
    ];
    for &i in &order {
        let d = &mut drafts[i];
        let s = &mut states[d.key];
        let ver = |v: u64| opts.versions.then_some(v);
        let output = match &d.input {
            KvInput::Put { .. } if lost == Some(i) => KvOutput::Put {
                version: ver(s.version + 1),
            },
            KvInput::Get => KvOutput::Get {
                value: s.value.clone(),
                version: ver(s.version),
            },
            KvInput::Put { value } | KvInput::Append { value } => {
                s.value = Some(value.clone());
                s.version += 1;
                d.produced = Some((value.clone(), s.version));
                KvOutput::Put {
                    version: ver(s.version),
                }
            }
            KvInput::Cas { value, .. } | KvInput::Cput { value, .. } => {
                let ok = match &d.input {
                    KvInput::Cas { expect, .. } => *expect == s.value,
                    KvInput::Cput { expect_version, .. } => *expect_version == s.version,
                    _ => unreachable!("matched above"),
                };
                if ok {
                    s.value = Some(value.clone());
                    s.version += 1;
                    d.produced = Some((value.clone(), s.version));
                }
                KvOutput::Cond {
                    ok,
                    version: ver(s.version),
                }
            }
        };
        if !d.unknown {
            d.output = Some(match output {
                KvOutput::Put { .. } if rng.gen_bool(opts.versionless_puts.clamp(0.0, 1.0)) => {
                    KvOutput::Put { version: None }
                }
                o => o,
            });
        }
    }
    let stale = if opts.stale_read {
        inject_stale_read(&mut drafts, opts.versions)
    } else {
        None
    };
    let phantom = if opts.phantom_value {
        let g = (0..drafts.len()).find(|&i| {
            late(&drafts[i], i)
                && matches!(drafts[i].input, KvInput::Get)
                && drafts[i].output.is_some()
        });
        if let Some(g) = g {
            drafts[g].output = Some(KvOutput::Get {
                value: Some(Val::from("phantom")),
                version: None,
            });
        }
        g
    } else {
        None
    };
    let injected = phantom.or(lost);
    let mut idx: Vec<usize> = (0..drafts.len()).collect();
    idx.sort_by_key(|&i| (drafts[i].call, i));
    let mut stale_id = None;
    let mut injected_id = None;
    let ops = idx
        .iter()
        .enumerate()
        .map(|(id, &i)| {
            let d = &drafts[i];
            if stale == Some(i) {
                stale_id = Some(id as u64);
            }
            if injected == Some(i) {
                injected_id = Some(id as u64);
            }
            Operation {
                id: id as u64,
                client: d.client,
                key: format!("k{}", d.key),
                input: d.input.clone(),
                invoke: d.call,
                ret: d.show_ret.then_some(d.ret),
                output: d.output.clone(),
            }
        })
        .collect();
    Generated {
        ops,
        spec: KvSpec {
            init: BTreeMap::new(),
            track_versions: opts.versions || opts.conditional_puts,
        },
        stale_read: stale_id,
        injected: injected_id,
    }
}

/// What a write does to the state when it is applied: whether it changes
/// it (a put always; a compare-and-set or a conditional put when its guard
/// holds).
fn apply(s: &mut KvState, input: &KvInput) -> bool {
    let ok = match input {
        KvInput::Get => false,
        KvInput::Put { .. } | KvInput::Append { .. } => true,
        KvInput::Cas { expect, .. } => *expect == s.value,
        KvInput::Cput { expect_version, .. } => *expect_version == s.version,
    };
    if ok {
        if let KvInput::Put { value }
        | KvInput::Append { value }
        | KvInput::Cas { value, .. }
        | KvInput::Cput { value, .. } = input
        {
            s.value = Some(value.clone());
            s.version += 1;
        }
    }
    ok
}

/// The put to lose for [`GenOptions::lost_write`]: the first acknowledged
/// put past two thirds of the history (in `order`, the linearization
/// order) after which, replayed without it, a completed get comes with no
/// write changing the state between them. That get then sees the value
/// before the put: the initial one, or one that a completed operation saw
/// (wrote or read) before the put took effect. Their intervals are
/// narrowed around their points, where they do not already, so that this
/// operation returns before the put is invoked and the get is invoked after
/// the put returns: the put's value is then out of reach in any
/// linearization (a value, once overwritten, does not come back).
/// Returns the put, after narrowing.
fn lose_a_write(drafts: &mut [Draft], order: &[usize], keys: usize) -> Option<usize> {
    let nd = drafts.len();
    let mut states = vec![
        KvState {
            value: None,
            version: 0
        };
        keys
    ];
    // Per key: the completed operation on the current value that returned
    // first (`None`: none, or the initial value).
    let mut seen: Vec<Option<usize>> = vec![None; keys];
    let mut found = None;
    for (q, &i) in order.iter().enumerate() {
        let d = &drafts[i];
        let key = d.key;
        let point = |j: usize| drafts[j].point.unwrap_or(i64::MAX);
        let before = seen[key].filter(|&a| point(a) < point(i));
        let initial = states[key].value.is_none();
        if i * 3 >= nd * 2
            && !d.unknown
            && matches!(d.input, KvInput::Put { .. })
            && (initial || before.is_some())
        {
            // Replay on without it, up to the next change of the state:
            // the completed get invoked last.
            let mut s = states[key].clone();
            let mut get = None;
            for &j in &order[q + 1..] {
                let e = &drafts[j];
                if e.key != key {
                    continue;
                }
                if matches!(e.input, KvInput::Get) {
                    if !e.unknown
                        && point(j) > point(i)
                        && get.is_none_or(|g: usize| drafts[g].call < e.call)
                    {
                        get = Some(j);
                    }
                } else if apply(&mut s, &e.input) {
                    break;
                }
            }
            if let Some(g) = get {
                found = Some((i, before.filter(|_| !initial), g));
                break;
            }
        }
        if apply(&mut states[key], &d.input) {
            seen[key] = (!d.unknown).then_some(i);
        } else if matches!(d.input, KvInput::Get)
            && !d.unknown
            && states[key].value.is_some()
            && seen[key].is_none_or(|a| drafts[a].ret > d.ret)
        {
            seen[key] = Some(i);
        }
    }
    let (w, seen_before, get) = found?;
    let (pw, pg) = (
        drafts[w].point.unwrap_or(i64::MAX),
        drafts[get].point.unwrap_or(i64::MAX),
    );
    if let Some(a) = seen_before {
        drafts[a].ret = drafts[a].ret.min(pw - 1);
        drafts[w].call = drafts[w].call.max(drafts[a].ret + 1);
    }
    drafts[w].ret = drafts[w].ret.min(pg - 1);
    drafts[get].call = drafts[get].call.max(drafts[w].ret + 1);
    Some(w)
}

/// Makes a completed read, as late as possible, return the value of a write
/// w1 that a later completed write w2 certainly overwrote before the read was
/// invoked (w1.ret < w2.call, w2.ret < read.call; values are unique).
fn inject_stale_read(drafts: &mut [Draft], versions: bool) -> Option<usize> {
    let mut reads: Vec<usize> = (0..drafts.len())
        .filter(|&i| matches!(drafts[i].input, KvInput::Get) && drafts[i].output.is_some())
        .collect();
    reads.sort_by_key(|&i| std::cmp::Reverse((drafts[i].call, i)));
    for g in reads {
        let key = drafts[g].key;
        let done = |i: usize| {
            drafts[i].key == key && drafts[i].output.is_some() && drafts[i].produced.is_some()
        };
        // w2: a completed state-changing write that returned before g's call.
        let w2s: Vec<usize> = (0..drafts.len())
            .filter(|&i| done(i) && drafts[i].ret < drafts[g].call)
            .collect();
        for &w2 in w2s.iter().rev() {
            if let Some(w1) = (0..drafts.len())
                .filter(|&i| done(i) && drafts[i].ret < drafts[w2].call)
                .max_by_key(|&i| (drafts[i].ret, i))
            {
                let (value, version) = drafts[w1].produced.clone()?;
                drafts[g].output = Some(KvOutput::Get {
                    value: Some(value),
                    version: versions.then_some(version),
                });
                return Some(g);
            }
        }
    }
    None
}

/// Generates a one-key history with versions in the outputs, of the class
/// of interchangeable unknown writes: sequential known puts and gets, and
/// every so often a chain of operations that time out (no response): four to
/// eight puts that never take effect, then a put of a value `w0` and one to
/// three compare-and-sets `w0 → w1 → …` that do take effect, unread until a
/// get sees the last one. With `stale_read`, a last get sees the value and
/// version of the start of the last chain after a get saw its end (a
/// guaranteed violation). Deterministic in `seed`; about `ops` operations.
pub fn unknown_write_chains(seed: u64, ops: usize, stale_read: bool) -> Generated {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out: Vec<Operation<KvInput, KvOutput>> = Vec::with_capacity(ops + 16);
    let mut value: Option<Val> = None;
    let mut version = 0u64;
    let mut t = 0i64;
    let mut counter = 0u64;
    let mut next_client = 8u64;
    let mut last_chain: Option<(Val, u64)> = None;
    let fresh = |counter: &mut u64| -> Val {
        *counter += 1;
        Val::from(counter.to_string())
    };
    let push = |out: &mut Vec<Operation<KvInput, KvOutput>>,
                client: u64,
                input: KvInput,
                invoke: i64,
                ret: Option<i64>,
                output: Option<KvOutput>| {
        out.push(Operation {
            id: out.len() as u64,
            client,
            key: "k0".into(),
            input,
            invoke,
            ret,
            output,
        });
    };
    while out.len() < ops {
        let r: f64 = rng.gen();
        let client = rng.gen_range(0..8u64);
        let dur = rng.gen_range(5..30);
        if r < 0.45 {
            let v = fresh(&mut counter);
            version += 1;
            value = Some(v.clone());
            push(
                &mut out,
                client,
                KvInput::Put { value: v },
                t,
                Some(t + dur),
                Some(KvOutput::Put {
                    version: Some(version),
                }),
            );
        } else if r < 0.85 {
            push(
                &mut out,
                client,
                KvInput::Get,
                t,
                Some(t + dur),
                Some(KvOutput::Get {
                    value: value.clone(),
                    version: Some(version),
                }),
            );
        } else {
            for _ in 0..rng.gen_range(4..=8) {
                let v = fresh(&mut counter);
                push(
                    &mut out,
                    next_client,
                    KvInput::Put { value: v },
                    t,
                    None,
                    None,
                );
                next_client += 1;
                t += 1;
            }
            let w0 = fresh(&mut counter);
            push(
                &mut out,
                next_client,
                KvInput::Put { value: w0.clone() },
                t,
                None,
                None,
            );
            next_client += 1;
            version += 1;
            last_chain = Some((w0.clone(), version));
            let mut prev = w0;
            for _ in 0..rng.gen_range(1..=3) {
                t += 2;
                let w = fresh(&mut counter);
                push(
                    &mut out,
                    next_client,
                    KvInput::Cas {
                        expect: Some(prev),
                        value: w.clone(),
                    },
                    t,
                    None,
                    None,
                );
                next_client += 1;
                version += 1;
                prev = w;
            }
            value = Some(prev);
            t += 2;
            push(
                &mut out,
                client,
                KvInput::Get,
                t,
                Some(t + dur),
                Some(KvOutput::Get {
                    value: value.clone(),
                    version: Some(version),
                }),
            );
        }
        t += dur + 1 + rng.gen_range(0..5);
    }
    let mut stale = None;
    if stale_read {
        if let Some((w0, v0)) = last_chain {
            stale = Some(out.len() as u64);
            push(
                &mut out,
                0,
                KvInput::Get,
                t,
                Some(t + 10),
                Some(KvOutput::Get {
                    value: Some(w0),
                    version: Some(v0),
                }),
            );
        }
    }
    Generated {
        ops: out,
        spec: KvSpec {
            init: BTreeMap::new(),
            track_versions: true,
        },
        stale_read: stale,
        injected: None,
    }
}

/// The history shapes of the checker's performance targets, by name: the
/// criterion bench (`lin/benches/lin.rs`) and the kvhist writer in the tests
/// both take them from here.
pub fn bench_cases() -> Vec<(&'static str, GenOptions)> {
    [
        ("one_key_1000_ops_24_clients_ok", false, false, 1000, 24, 1),
        ("one_key_1000_ops_24_clients_bad", false, true, 1000, 24, 1),
        ("one_key_1000_ops_48_clients_ok", false, false, 1000, 48, 1),
        ("one_key_1000_ops_48_clients_bad", false, true, 1000, 48, 1),
        (
            "versions_100k_ops_one_key_32_clients_ok",
            true,
            false,
            100_000,
            32,
            1,
        ),
        (
            "versions_100k_ops_one_key_32_clients_bad",
            true,
            true,
            100_000,
            32,
            1,
        ),
        ("100k_ops_100_keys_ok", false, false, 100_000, 32, 100),
        ("100k_ops_100_keys_bad", false, true, 100_000, 32, 100),
    ]
    .into_iter()
    .map(|(name, versions, stale_read, ops, clients, keys)| {
        let opts = GenOptions {
            seed: 1,
            ops,
            clients,
            keys,
            versions,
            unknown_writes: 0.01,
            stale_read,
            ..GenOptions::default()
        };
        (name, opts)
    })
    .collect()
}

/// One key, no versions in the answers, every written value unique: get
/// 50%, put 20%, cas 15%, cput 15% ([`GenOptions::conditional_puts`]),
/// durations 10–1,000, think times 0–100, no timeouts; with `stale_read`,
/// one stale read injected (other violations: [`GenOptions::with`]). The
/// class the unique-values pass decides ([`crate::unique`]).
pub fn unique_mix(seed: u64, ops: usize, clients: usize, stale_read: bool) -> GenOptions {
    GenOptions {
        seed,
        ops,
        clients,
        keys: 1,
        versions: false,
        conditional_puts: true,
        unknown_writes: 0.0,
        unknown_reads: 0.0,
        duration: (10, 1000),
        think: (0, 100),
        stale_read,
        versionless_puts: 0.0,
        phantom_value: false,
        lost_write: false,
    }
}
