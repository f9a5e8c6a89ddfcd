//! The key-value register spec of the kvhist/1 format
//! (the book's kvhist/1 page, `docs/src/reference/kvhist.md`) and its parser.
//!
//! Each key is an independent register with a value (or absent) and a
//! version; `get`, `put`, `cas` (compare-and-set by value), `cput`
//! (conditional put by version) and the optional `append`.

use super::spec::{
    Claim, DeadStates, Guard, Next, RegisterOp, RegisterView, Spec, ValueUse, Values,
};
use super::Operation;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

mod parse;
pub use parse::{gathered_by, parse_kvhist, to_kvhist, KvHistory, Reader};

/// A value (shared, cheap to clone).
pub type Val = Arc<str>;

/// What a kvhist/1 operation asks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvInput {
    /// Read the value and version.
    Get,
    /// Write `value` unconditionally.
    Put {
        /// The value written.
        value: Val,
    },
    /// Write `value` iff the current value is `expect` (`None`: absent).
    Cas {
        /// The expected current value.
        expect: Option<Val>,
        /// The value written.
        value: Val,
    },
    /// Write `value` iff the current version is `expect_version`.
    Cput {
        /// The expected current version (0: never written).
        expect_version: u64,
        /// The value written.
        value: Val,
    },
    /// Append `value` to the current value (absent counts as empty).
    Append {
        /// The suffix.
        value: Val,
    },
}

/// What a kvhist/1 operation answered.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvOutput {
    /// A `get`'s result.
    Get {
        /// The value read (`None`: absent).
        value: Option<Val>,
        /// The version read, if reported.
        version: Option<u64>,
    },
    /// A `put` or `append` acknowledgement.
    Put {
        /// The version after the write, if reported.
        version: Option<u64>,
    },
    /// A `cas` or `cput` result.
    Cond {
        /// Whether the comparison held (and the write was made).
        ok: bool,
        /// The version after the operation, if reported.
        version: Option<u64>,
    },
}

/// The state of one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KvState {
    /// The value (`None`: absent).
    pub value: Option<Val>,
    /// The version (0 at the start unless given; kept at 0 when versions are
    /// not tracked).
    pub version: u64,
}

/// The value the search puts in place of one that no remaining operation
/// can observe ([`Spec::values`]), so that such states merge.
pub const OVERWRITTEN: &str = "\u{0}overwritten";

/// The kvhist/1 spec: per-key initial states and whether versions are
/// tracked.
#[derive(Clone, Debug, Default)]
pub struct KvSpec {
    /// Initial states of listed keys; others start absent at version 0.
    pub init: BTreeMap<String, KvState>,
    /// Track versions. When no operation mentions a version, leaving this
    /// off merges states that differ only in their version (faster).
    pub track_versions: bool,
}

fn q(v: &Option<Val>) -> String {
    match v {
        Some(s) => format!("{:?}", &**s),
        None => "absent".into(),
    }
}

impl KvSpec {
    fn write(&self, s: &KvState, value: Val) -> KvState {
        KvState {
            value: Some(value),
            version: if self.track_versions {
                s.version + 1
            } else {
                0
            },
        }
    }
    fn version_ok(&self, got: Option<u64>, s: &KvState) -> bool {
        !self.track_versions || got.is_none_or_eq(s.version)
    }
}

trait OptEq {
    fn is_none_or_eq(&self, v: u64) -> bool;
}
impl OptEq for Option<u64> {
    fn is_none_or_eq(&self, v: u64) -> bool {
        match self {
            None => true,
            Some(x) => *x == v,
        }
    }
}

impl Spec for KvSpec {
    type State = KvState;
    type Input = KvInput;
    type Output = KvOutput;

    fn init(&self, key: &str) -> KvState {
        match self.init.get(key) {
            Some(s) => KvState {
                value: s.value.clone(),
                version: if self.track_versions { s.version } else { 0 },
            },
            None => KvState {
                value: None,
                version: 0,
            },
        }
    }

    fn step(&self, s: &KvState, input: &KvInput, output: Option<&KvOutput>) -> Next<KvState> {
        let cond = |holds: bool, value: &Val| -> Next<KvState> {
            let ns = if holds {
                self.write(s, value.clone())
            } else {
                s.clone()
            };
            match output {
                None => Next::One(ns),
                Some(KvOutput::Cond { ok, version }) => {
                    if *ok == holds && self.version_ok(*version, &ns) {
                        Next::One(ns)
                    } else {
                        Next::Illegal
                    }
                }
                Some(_) => Next::Illegal,
            }
        };
        match input {
            KvInput::Get => match output {
                None => Next::One(s.clone()),
                Some(KvOutput::Get { value, version }) => {
                    if *value == s.value && self.version_ok(*version, s) {
                        Next::One(s.clone())
                    } else {
                        Next::Illegal
                    }
                }
                Some(_) => Next::Illegal,
            },
            KvInput::Put { value } | KvInput::Append { value } => {
                let value = match (input, &s.value) {
                    (KvInput::Append { .. }, Some(old)) => Val::from(format!("{old}{value}")),
                    _ => value.clone(),
                };
                let ns = self.write(s, value);
                match output {
                    None => Next::One(ns),
                    Some(KvOutput::Put { version }) if self.version_ok(*version, &ns) => {
                        Next::One(ns)
                    }
                    Some(_) => Next::Illegal,
                }
            }
            KvInput::Cas { expect, value } => cond(*expect == s.value, value),
            KvInput::Cput {
                expect_version,
                value,
            } => cond(*expect_version == s.version, value),
        }
    }

    fn is_legal(&self, s: &KvState, input: &KvInput, output: Option<&KvOutput>) -> bool {
        match (input, output) {
            (KvInput::Get, Some(KvOutput::Get { value, version })) => {
                *value == s.value && self.version_ok(*version, s)
            }
            (KvInput::Cas { expect, .. }, Some(KvOutput::Cond { ok: false, version })) => {
                *expect != s.value && self.version_ok(*version, s)
            }
            (KvInput::Cput { expect_version, .. }, Some(KvOutput::Cond { ok: false, version })) => {
                *expect_version != s.version && self.version_ok(*version, s)
            }
            _ => self.step(s, input, output).is_legal(),
        }
    }

    fn is_read_only(&self, input: &KvInput, output: Option<&KvOutput>) -> bool {
        match input {
            KvInput::Get => true,
            KvInput::Cas { .. } | KvInput::Cput { .. } => {
                matches!(output, Some(KvOutput::Cond { ok: false, .. }))
            }
            _ => false,
        }
    }

    fn version_of(&self, s: &KvState) -> Option<u64> {
        self.track_versions.then_some(s.version)
    }

    fn claim(&self, input: &KvInput, output: &KvOutput) -> Claim {
        if !self.track_versions {
            return Claim::None;
        }
        match (input, output) {
            (
                KvInput::Get,
                KvOutput::Get {
                    version: Some(v), ..
                },
            ) => Claim::At(*v),
            (KvInput::Put { .. } | KvInput::Append { .. }, KvOutput::Put { version: Some(v) }) => {
                Claim::Produced(*v)
            }
            (
                _,
                KvOutput::Cond {
                    ok: true,
                    version: Some(v),
                },
            ) => Claim::Produced(*v),
            (
                KvInput::Cput { expect_version, .. },
                KvOutput::Cond {
                    ok: true,
                    version: None,
                },
            ) => Claim::Produced(expect_version + 1),
            (
                _,
                KvOutput::Cond {
                    ok: false,
                    version: Some(v),
                },
            ) => Claim::At(*v),
            _ => Claim::None,
        }
    }

    /// Puts with an unknown outcome whose value no get returns and no cas
    /// expects (none when the key has an append: it reads the value it
    /// extends).
    fn blind_writes(&self, ops: &[(&KvInput, Option<&KvOutput>)]) -> Vec<bool> {
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        for (input, output) in ops {
            match (input, output) {
                (KvInput::Append { .. }, _) => return vec![false; ops.len()],
                (
                    KvInput::Cas {
                        expect: Some(e), ..
                    },
                    _,
                ) => {
                    seen.insert(e);
                }
                (_, Some(KvOutput::Get { value: Some(v), .. })) => {
                    seen.insert(v);
                }
                _ => {}
            }
        }
        ops.iter()
            .map(|(input, output)| match (input, output) {
                (KvInput::Put { value }, None) => !seen.contains(&**value),
                _ => false,
            })
            .collect()
    }

    /// Without versions and appends: gets need the value they read, a
    /// compare-and-set observes the value it expects, puts write
    /// unconditionally. The value nobody observes is [`OVERWRITTEN`].
    fn values(&self, ops: &[(&KvInput, Option<&KvOutput>)]) -> Option<Values<KvState>> {
        if self.track_versions {
            return None;
        }
        let mut ids: FxHashMap<Option<Val>, u32> = FxHashMap::default();
        let mut id = |v: Option<&Val>| -> u32 {
            let n = ids.len() as u32;
            *ids.entry(v.cloned()).or_insert(n)
        };
        let mut uses = Vec::with_capacity(ops.len());
        for (input, output) in ops {
            let u = match (input, output) {
                (KvInput::Append { .. }, _) => return None,
                (KvInput::Get, Some(KvOutput::Get { value, .. })) => {
                    let v = id(value.as_ref());
                    ValueUse {
                        needs: Some(v),
                        observes: Some(v),
                        ..ValueUse::default()
                    }
                }
                (KvInput::Put { value }, None | Some(KvOutput::Put { .. })) => ValueUse {
                    writes: Some(id(Some(value))),
                    unconditional: true,
                    ..ValueUse::default()
                },
                (KvInput::Cas { expect, value }, None | Some(KvOutput::Cond { .. })) => {
                    let e = id(expect.as_ref());
                    let ok = match output {
                        Some(KvOutput::Cond { ok, .. }) => Some(*ok),
                        _ => None,
                    };
                    ValueUse {
                        needs: (ok == Some(true)).then_some(e),
                        observes: Some(e),
                        writes: (ok != Some(false)).then(|| id(Some(value))),
                        unconditional: false,
                    }
                }
                // Versions are not tracked: a cput compares version 0 only.
                (KvInput::Cput { value, .. }, None | Some(KvOutput::Cond { ok: true, .. })) => {
                    ValueUse {
                        writes: Some(id(Some(value))),
                        ..ValueUse::default()
                    }
                }
                // Reads without a result, failed cputs, and outputs of the
                // wrong kind (illegal everywhere) do not use the value.
                _ => ValueUse::default(),
            };
            uses.push(u);
        }
        let marker = Val::from(OVERWRITTEN);
        if ids.contains_key(&Some(marker.clone())) {
            return None;
        }
        // States hold the operations' own values (shared, not copied):
        // look them up by address first, without hashing the string. The
        // map keeps every value it has the address of alive, so an address
        // found always holds the same string.
        let mut by_addr: FxHashMap<usize, u32> = FxHashMap::default();
        let mut alive: Vec<Val> = Vec::new();
        for (input, output) in ops {
            let written = match input {
                KvInput::Put { value }
                | KvInput::Cas { value, .. }
                | KvInput::Cput { value, .. } => Some(value),
                _ => None,
            };
            let read = match output {
                Some(KvOutput::Get { value: Some(v), .. }) => Some(v),
                _ => None,
            };
            for v in written.into_iter().chain(read) {
                if let Some(&id) = ids.get(&Some(v.clone())) {
                    if by_addr
                        .insert(Arc::as_ptr(v) as *const u8 as usize, id)
                        .is_none()
                    {
                        alive.push(v.clone());
                    }
                }
            }
        }
        Some(Values {
            uses,
            value_of: Box::new(move |s: &KvState| {
                let _ = &alive;
                if let Some(v) = &s.value {
                    if let Some(&id) = by_addr.get(&(Arc::as_ptr(v) as *const u8 as usize)) {
                        return Some(id);
                    }
                }
                ids.get(&s.value).copied()
            }),
            overwritten: Box::new(move |s: &KvState| KvState {
                value: Some(marker.clone()),
                version: s.version,
            }),
        })
    }

    /// Get, put, cas and cput (the last with versions tracked) whose
    /// outputs report no version; `None` for anything else (an append, a
    /// version in an output, an output of the wrong kind), and when a value
    /// is written twice or the initial value written again (the pass would
    /// not apply).
    fn register<'a>(
        &self,
        init: &'a KvState,
        ops: &[(&'a KvInput, Option<&'a KvOutput>)],
    ) -> Option<RegisterView> {
        // First the cheap ways out: an append, a version in an output, or
        // a value written twice (or the initial one written again), before
        // numbering anything.
        // (The first few values written are compared one by one, without
        // allocating: on most keys whose values repeat, one repeats early.)
        const FEW: usize = 8;
        let mut few: [&str; FEW] = [""; FEW];
        let mut nfew = 0;
        let mut written: FxHashSet<&str> = FxHashSet::default();
        for (input, output) in ops {
            if let Some(
                KvOutput::Get {
                    version: Some(_), ..
                }
                | KvOutput::Put { version: Some(_) }
                | KvOutput::Cond {
                    version: Some(_), ..
                },
            ) = output
            {
                return None;
            }
            let v = match input {
                KvInput::Append { .. } => return None,
                KvInput::Get => continue,
                KvInput::Put { value }
                | KvInput::Cas { value, .. }
                | KvInput::Cput { value, .. } => value,
            };
            if init.value.as_deref() == Some(&**v) {
                return None;
            }
            if nfew < FEW {
                if few[..nfew].contains(&&**v) {
                    return None;
                }
                few[nfew] = v;
                nfew += 1;
                continue;
            }
            if written.is_empty() {
                written.extend(few);
            }
            if !written.insert(v) {
                return None;
            }
        }
        drop(written);
        let mut ids: FxHashMap<Option<&'a str>, u32> = FxHashMap::default();
        let mut id = |v: Option<&'a str>| -> u32 {
            let n = ids.len() as u32;
            *ids.entry(v).or_insert(n)
        };
        let init_id = id(init.value.as_deref());
        let mut out = Vec::with_capacity(ops.len());
        for (input, output) in ops {
            let op = match (input, output) {
                (
                    KvInput::Get,
                    Some(KvOutput::Get {
                        value,
                        version: None,
                    }),
                ) => RegisterOp::Read(id(value.as_deref())),
                (KvInput::Put { value }, None) => RegisterOp::MayWrite {
                    value: id(Some(value)),
                    guard: None,
                },
                (KvInput::Put { value }, Some(KvOutput::Put { version: None })) => {
                    RegisterOp::Wrote {
                        value: id(Some(value)),
                        guard: None,
                    }
                }
                (KvInput::Cas { expect, value }, _) => {
                    let guard = Guard::Value(id(expect.as_deref()));
                    let value = id(Some(value));
                    match output {
                        None => RegisterOp::MayWrite {
                            value,
                            guard: Some(guard),
                        },
                        Some(KvOutput::Cond {
                            ok: true,
                            version: None,
                        }) => RegisterOp::Wrote {
                            value,
                            guard: Some(guard),
                        },
                        Some(KvOutput::Cond {
                            ok: false,
                            version: None,
                        }) => RegisterOp::Refused(guard),
                        Some(_) => return None,
                    }
                }
                (
                    KvInput::Cput {
                        expect_version,
                        value,
                    },
                    _,
                ) if self.track_versions => {
                    let guard = Guard::Version(*expect_version);
                    let value = id(Some(value));
                    match output {
                        None => RegisterOp::MayWrite {
                            value,
                            guard: Some(guard),
                        },
                        Some(KvOutput::Cond {
                            ok: true,
                            version: None,
                        }) => RegisterOp::Wrote {
                            value,
                            guard: Some(guard),
                        },
                        Some(KvOutput::Cond {
                            ok: false,
                            version: None,
                        }) => RegisterOp::Refused(guard),
                        Some(_) => return None,
                    }
                }
                _ => return None,
            };
            out.push(op);
        }
        Some(RegisterView {
            init: init_id,
            init_version: if self.track_versions { init.version } else { 0 },
            ops: out,
        })
    }

    /// Without versions, with appends: a value is dead once no remaining
    /// get reads a value it is a prefix of and no remaining compare-and-set
    /// expects one (appends only extend it, a put or a successful
    /// compare-and-set replaces it whatever it was). Dead values become
    /// [`OVERWRITTEN`].
    fn dead_states(
        &self,
        ops: &[(&KvInput, Option<&KvOutput>)],
        last_event: &[u32],
    ) -> Option<DeadStates<KvState>> {
        if self.track_versions || !ops.iter().any(|(i, _)| matches!(i, KvInput::Append { .. })) {
            return None;
        }
        // Per prefix hash of an observed value, the last event of its
        // observers (a hash collision only keeps a state alive longer).
        let mut prefixes: FxHashMap<u64, u32> = FxHashMap::default();
        let mut absent: Option<u32> = None;
        for ((input, output), &last) in ops.iter().zip(last_event) {
            let seen = match (input, output) {
                (KvInput::Get, Some(KvOutput::Get { value, .. })) => value,
                (KvInput::Cas { expect, .. }, _) => expect,
                _ => continue,
            };
            let Some(v) = seen else {
                absent = absent.max(Some(last));
                continue;
            };
            if v.starts_with('\u{0}') {
                return None; // could be taken for the marker
            }
            let mut h = PREFIX_HASH_SEED;
            let mut note = |h: u64| {
                let e = prefixes.entry(h).or_insert(last);
                *e = (*e).max(last);
            };
            note(h);
            for b in v.bytes() {
                h = prefix_hash_step(h, b);
                note(h);
            }
        }
        let marker = Val::from(OVERWRITTEN);
        Some(DeadStates {
            last_observer: Box::new(move |s: &KvState| match &s.value {
                // An append to an absent key starts from the empty value.
                None => absent.max(prefixes.get(&PREFIX_HASH_SEED).copied()),
                Some(v) => prefixes.get(&prefix_hash(v)).copied(),
            }),
            dead: Box::new(move |s: &KvState| KvState {
                value: Some(marker.clone()),
                version: s.version,
            }),
        })
    }

    fn describe_op(&self, input: &KvInput, output: Option<&KvOutput>) -> String {
        let ver = |v: &Option<u64>| v.map_or(String::new(), |v| format!(" @v{v}"));
        let i = match input {
            KvInput::Get => "get".to_string(),
            KvInput::Put { value } => format!("put {:?}", &**value),
            KvInput::Append { value } => format!("append {:?}", &**value),
            KvInput::Cas { expect, value } => format!("cas {}→{:?}", q(expect), &**value),
            KvInput::Cput {
                expect_version,
                value,
            } => format!("cput v{expect_version}→{:?}", &**value),
        };
        let o = match output {
            None => "?".to_string(),
            Some(KvOutput::Get { value, version }) => format!("{}{}", q(value), ver(version)),
            Some(KvOutput::Put { version }) => format!("ok{}", ver(version)),
            Some(KvOutput::Cond { ok, version }) => {
                format!("{}{}", if *ok { "ok" } else { "fail" }, ver(version))
            }
        };
        format!("{i} → {o}")
    }

    fn describe_state(&self, s: &KvState) -> String {
        if s.value.as_deref() == Some(OVERWRITTEN) {
            return "a value no remaining operation reads".into();
        }
        if self.track_versions {
            format!("{} @v{}", q(&s.value), s.version)
        } else {
            q(&s.value)
        }
    }

    fn describe_need(&self, input: &KvInput, output: &KvOutput) -> Option<String> {
        let vs = |v: &Option<u64>| match v {
            Some(v) if self.track_versions => format!(" at version {v}"),
            _ => String::new(),
        };
        Some(match (input, output) {
            (KvInput::Get, KvOutput::Get { value, version }) => match value {
                Some(x) => format!("the value {:?}{}", &**x, vs(version)),
                None => format!("the key absent{}", vs(version)),
            },
            (KvInput::Cas { expect, .. }, KvOutput::Cond { ok: true, .. }) => match expect {
                Some(x) => format!("the value {:?}", &**x),
                None => "the key absent".into(),
            },
            (KvInput::Cas { expect, .. }, KvOutput::Cond { ok: false, .. }) => {
                format!("a value other than {}", q(expect))
            }
            (KvInput::Cput { expect_version, .. }, KvOutput::Cond { ok: true, .. }) => {
                format!("version {expect_version}")
            }
            (KvInput::Cput { expect_version, .. }, KvOutput::Cond { ok: false, version }) => {
                match version {
                    Some(v) => format!("version {v}"),
                    None => format!("a version other than {expect_version}"),
                }
            }
            (_, KvOutput::Put { version: Some(v) }) if self.track_versions => {
                format!("version {}", v.saturating_sub(1))
            }
            _ => return None,
        })
    }
}

/// The hash of the empty prefix ([`KvSpec::dead_states`]).
const PREFIX_HASH_SEED: u64 = 0xcbf2_9ce4_8422_2325;

/// Extends a prefix hash by one byte (a rolling hash, so that every prefix
/// of a value is hashed in one pass).
fn prefix_hash_step(h: u64, b: u8) -> u64 {
    (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
}

/// The prefix hash of a whole value.
fn prefix_hash(v: &str) -> u64 {
    v.bytes().fold(PREFIX_HASH_SEED, prefix_hash_step)
}
