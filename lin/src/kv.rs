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

mod scan;

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
            if init.value.as_deref() == Some(&**v) || !written.insert(v) {
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

/// A parsed kvhist/1 document.
#[derive(Clone, Debug)]
pub struct KvHistory {
    /// The operations, in file order.
    pub ops: Vec<Operation<KvInput, KvOutput>>,
    /// The spec (initial states; versions tracked iff the history mentions one).
    pub spec: KvSpec,
    /// `meta.expected`, if present.
    pub expected: Option<String>,
}

/// The kvhist/1 document as written (strings borrowed from the text where
/// they have no escapes).
#[derive(Deserialize)]
struct DocIn<'a> {
    #[serde(default, borrow)]
    format: Option<Str<'a>>,
    #[serde(default)]
    meta: Option<MetaIn>,
    #[serde(default, borrow)]
    init: Option<BTreeMap<String, InitIn<'a>>>,
    #[serde(borrow)]
    ops: Vec<OpIn<'a>>,
}

/// A string borrowed from the document when it has no escapes (serde's own
/// `Cow` does not borrow inside an `Option`).
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// Any JSON value; `Some` only for a non-negative integer (`id` is
/// free-form), read without building the value.
struct AnyId(Option<u64>);

impl<'de> Deserialize<'de> for AnyId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = AnyId;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_u64<E>(self, v: u64) -> Result<AnyId, E> {
                Ok(AnyId(Some(v)))
            }
            fn visit_i64<E>(self, _: i64) -> Result<AnyId, E> {
                Ok(AnyId(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<AnyId, E> {
                Ok(AnyId(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<AnyId, E> {
                Ok(AnyId(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<AnyId, E> {
                Ok(AnyId(None))
            }
            fn visit_unit<E>(self) -> Result<AnyId, E> {
                Ok(AnyId(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<AnyId, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(AnyId(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<AnyId, A::Error> {
                while a
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(AnyId(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// The part of `meta` a reader looks at; the rest is free-form.
#[derive(Deserialize)]
struct MetaIn {
    #[serde(default, deserialize_with = "string_or_nothing")]
    expected: Option<String>,
}

/// One entry of `init`.
#[derive(Deserialize)]
struct InitIn<'a> {
    #[serde(default, borrow)]
    value: Option<Str<'a>>,
    #[serde(default)]
    version: Option<u64>,
}

impl InitIn<'_> {
    /// The state it gives (defaults: absent, version 0).
    fn state(self, intern: &mut Interner) -> KvState {
        KvState {
            value: self.value.map(|v| intern.val(&v)),
            version: self.version.unwrap_or(0),
        }
    }
}

/// The operation names of kvhist/1.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum FIn {
    Get,
    Put,
    Cas,
    Cput,
    Append,
}

/// One operation as written.
#[derive(Deserialize)]
struct OpIn<'a> {
    #[serde(default)]
    id: Option<AnyId>,
    client: u64,
    #[serde(borrow)]
    key: Cow<'a, str>,
    f: FIn,
    #[serde(default, borrow)]
    value: Option<Str<'a>>,
    /// Outer `None`: absent; `Some(None)`: `null` (the key absent).
    #[serde(default, borrow, deserialize_with = "present")]
    expect: Option<Option<Str<'a>>>,
    #[serde(default)]
    expect_version: Option<u64>,
    call: i64,
    #[serde(default)]
    ret: Option<i64>,
    #[serde(default, borrow)]
    out: Option<OutIn<'a>>,
}

/// An operation's `out` as written.
#[derive(Deserialize)]
struct OutIn<'a> {
    /// Outer `None`: absent; `Some(None)`: `null` (the key absent).
    #[serde(default, borrow, deserialize_with = "present")]
    value: Option<Option<Str<'a>>>,
    #[serde(default)]
    version: Option<u64>,
    #[serde(default)]
    ok: Option<bool>,
}

/// A field that is present (possibly `null`): `Some(inner)`.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Any JSON value; `Some` only for a string (`meta` is free-form).
fn string_or_nothing<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    })
}

/// Shares equal values (histories repeat a value in every read of it).
#[derive(Default)]
struct Interner(FxHashSet<Val>);

impl Interner {
    fn val(&mut self, s: &str) -> Val {
        if let Some(v) = self.0.get(s) {
            return v.clone();
        }
        let v = Val::from(s);
        self.0.insert(v.clone());
        v
    }
}

/// Parses a kvhist/1 document. Never panics; the error is one line saying
/// what is wrong and where, with the JSON path (e.g. `ops[3].out: missing
/// field `value``, or `ops[3]: "ret" (5) is before "call" (9)`).
pub fn parse_kvhist(text: &str) -> Result<KvHistory, String> {
    // The fast path converts each operation as it is read, with no record
    // of the JSON path; on any error the slow path says what is wrong.
    if let Some(h) = parse_fast(text) {
        return Ok(h);
    }
    parse_with_paths(text)
}

/// What the fast path gathers while it reads the document.
#[derive(Default)]
struct Gathered {
    intern: Interner,
    track: bool,
    ops: Vec<Operation<KvInput, KvOutput>>,
    init: BTreeMap<String, KvState>,
    expected: Option<String>,
    format_ok: bool,
    seen_ops: bool,
}

/// serde's fast reader: one pass, every operation converted as it is read
/// (no intermediate copy of the `ops` array); `None` on any error.
fn read_serde(text: &str, g: &mut Gathered) -> Option<()> {
    use serde::de::{DeserializeSeed, Error, IgnoredAny, MapAccess, SeqAccess, Visitor};
    struct Doc<'g>(&'g mut Gathered);
    struct Ops<'g>(&'g mut Gathered);
    impl<'de> Visitor<'de> for Ops<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an array of operations")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let g = self.0;
            if let Some(n) = seq.size_hint() {
                g.ops.reserve(n);
            }
            while let Some(o) = seq.next_element::<OpIn<'de>>()? {
                let i = g.ops.len();
                let (op, mentions) = op_from(i, o, &mut g.intern).map_err(A::Error::custom)?;
                g.track |= mentions;
                g.ops.push(op);
            }
            Ok(())
        }
    }
    impl<'de> DeserializeSeed<'de> for Ops<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_seq(self)
        }
    }
    impl<'de> Visitor<'de> for Doc<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a kvhist/1 document")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let g = self.0;
            let (mut format, mut meta, mut init) = (false, false, false);
            while let Some(k) = map.next_key::<Str<'de>>()? {
                let once = |seen: &mut bool| {
                    if std::mem::replace(seen, true) {
                        Err(A::Error::custom("duplicate field"))
                    } else {
                        Ok(())
                    }
                };
                match &*k {
                    "format" => {
                        once(&mut format)?;
                        let f = map.next_value::<Option<Str<'de>>>()?;
                        g.format_ok = f.is_none_or(|f| &*f == "kvhist/1");
                    }
                    "meta" => {
                        once(&mut meta)?;
                        g.expected = map.next_value::<Option<MetaIn>>()?.and_then(|m| m.expected);
                    }
                    "init" => {
                        once(&mut init)?;
                        let i = map.next_value::<Option<BTreeMap<String, InitIn<'de>>>>()?;
                        for (k, s) in i.into_iter().flatten() {
                            let st = s.state(&mut g.intern);
                            g.track |= st.version != 0;
                            g.init.insert(k, st);
                        }
                    }
                    "ops" => {
                        let mut seen = g.seen_ops;
                        once(&mut seen)?;
                        g.seen_ops = true;
                        map.next_value_seed(Ops(&mut *g))?;
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(())
        }
    }
    impl<'de> DeserializeSeed<'de> for Doc<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    Doc(g).deserialize(&mut de).ok()?;
    de.end().ok()
}

/// Reads a kvhist/1 document in one pass, converting every operation as it
/// is read (no intermediate copy of the `ops` array); `None` on any error.
fn parse_fast(text: &str) -> Option<KvHistory> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    // The hand-written reader first (about twice as fast), serde when it
    // gives up.
    let g = match read_by(text, Reader::Scan) {
        Some(g) => g,
        None => read_by(text, Reader::Serde)?,
    };
    gathered_history(g)
}

/// The two fast readers of [`parse_fast`].
#[derive(Clone, Copy)]
enum Reader {
    /// The hand-written one ([`scan`]), which gives up on what it does not
    /// handle exactly as serde would.
    Scan,
    /// serde's.
    Serde,
}

/// What one reader gathers from the document; `None` on any error (or
/// when the hand-written reader gives up).
fn read_by(text: &str, reader: Reader) -> Option<Gathered> {
    let mut g = Gathered {
        format_ok: true,
        ..Gathered::default()
    };
    match reader {
        Reader::Scan => scan::scan(text, &mut g)?,
        Reader::Serde => read_serde(text, &mut g)?,
    }
    Some(g)
}

/// The history a reader gathered, if it is a kvhist/1 document.
fn gathered_history(g: Gathered) -> Option<KvHistory> {
    if !g.format_ok || !g.seen_ops {
        return None;
    }
    Some(KvHistory {
        ops: g.ops,
        spec: KvSpec {
            init: g.init,
            track_versions: g.track,
        },
        expected: g.expected,
    })
}

/// Parses a kvhist/1 document tracking JSON paths, for the error message.
fn parse_with_paths(text: &str) -> Result<KvHistory, String> {
    if !text.trim_start().starts_with('{') {
        // serde would take an array for a struct written positionally.
        return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => "the document is not a JSON object".into(),
            Err(e) => format!("not valid JSON: {e}"),
        });
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let doc: DocIn<'_> = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            format!("not valid JSON: {inner}")
        } else if path == "." {
            format!("not a kvhist/1 document: {inner}")
        } else {
            format!("{path}: {inner}")
        }
    })?;
    de.end().map_err(|e| format!("not valid JSON: {e}"))?;
    if let Some(f) = &doc.format {
        let f: &str = f;
        if f != "kvhist/1" {
            return Err(format!("unsupported format {f:?} (expected \"kvhist/1\")"));
        }
    }
    let mut intern = Interner::default();
    let mut track = false;
    let mut init = BTreeMap::new();
    for (k, s) in doc.init.into_iter().flatten() {
        let st = s.state(&mut intern);
        track |= st.version != 0;
        init.insert(k, st);
    }
    let mut ops = Vec::with_capacity(doc.ops.len());
    for (i, o) in doc.ops.into_iter().enumerate() {
        let (op, mentions) = op_from(i, o, &mut intern).map_err(|e| format!("ops[{i}]: {e}"))?;
        track |= mentions;
        ops.push(op);
    }
    Ok(KvHistory {
        ops,
        spec: KvSpec {
            init,
            track_versions: track,
        },
        expected: doc.meta.and_then(|m| m.expected),
    })
}

/// Checks what serde cannot (fields each operation needs, `ret` after
/// `call`) and builds the operation; also says whether it mentions a version.
fn op_from(
    i: usize,
    o: OpIn<'_>,
    intern: &mut Interner,
) -> Result<(Operation<KvInput, KvOutput>, bool), String> {
    let name = match o.f {
        FIn::Get => "get",
        FIn::Put => "put",
        FIn::Cas => "cas",
        FIn::Cput => "cput",
        FIn::Append => "append",
    };
    let value = |intern: &mut Interner| -> Result<Val, String> {
        match &o.value {
            Some(v) => Ok(intern.val(v)),
            None => Err(format!("{name} needs a \"value\"")),
        }
    };
    let mut mentions = false;
    let input = match o.f {
        FIn::Get => KvInput::Get,
        FIn::Put => KvInput::Put {
            value: value(intern)?,
        },
        FIn::Append => KvInput::Append {
            value: value(intern)?,
        },
        FIn::Cas => {
            let Some(expect) = &o.expect else {
                return Err("cas needs \"expect\" (a string, or null for absent)".into());
            };
            KvInput::Cas {
                expect: expect.as_deref().map(|e| intern.val(e)),
                value: value(intern)?,
            }
        }
        FIn::Cput => {
            mentions = true;
            let Some(expect_version) = o.expect_version else {
                return Err("cput needs \"expect_version\"".into());
            };
            KvInput::Cput {
                expect_version,
                value: value(intern)?,
            }
        }
    };
    if let Some(r) = o.ret {
        if r < o.call {
            return Err(format!("\"ret\" ({r}) is before \"call\" ({})", o.call));
        }
    }
    let output = match o.out {
        None => None,
        Some(out) => {
            if o.ret.is_none() {
                return Err(
                    "has \"out\" but no \"ret\" (an answered op needs its return time)".into(),
                );
            }
            mentions |= out.version.is_some();
            let version = out.version;
            Some(match o.f {
                FIn::Get => {
                    let Some(v) = out.value else {
                        return Err(
                            "a get's out needs \"value\" (a string, or null for absent)".into()
                        );
                    };
                    KvOutput::Get {
                        value: v.as_deref().map(|v| intern.val(v)),
                        version,
                    }
                }
                FIn::Put | FIn::Append => KvOutput::Put { version },
                FIn::Cas | FIn::Cput => {
                    let Some(ok) = out.ok else {
                        return Err(format!("a {name}'s out needs \"ok\""));
                    };
                    KvOutput::Cond { ok, version }
                }
            })
        }
    };
    Ok((
        Operation {
            id: o.id.and_then(|a| a.0).unwrap_or(i as u64),
            client: o.client,
            key: o.key.into_owned(),
            input,
            invoke: o.call,
            ret: o.ret,
            output,
        },
        mentions,
    ))
}

/// Writes operations as a kvhist/1 document (one operation per line), with
/// `meta.expected` when given.
pub fn to_kvhist(
    spec: &KvSpec,
    ops: &[Operation<KvInput, KvOutput>],
    expected: Option<&str>,
) -> String {
    use serde_json::json;
    let s = |v: &Option<Val>| {
        v.as_deref()
            .map_or(Value::Null, |x| Value::String(x.to_string()))
    };
    let mut out = String::from("{\"format\":\"kvhist/1\",\n \"meta\":");
    out.push_str(&match expected {
        Some(e) => json!({ "expected": e }).to_string(),
        None => "{}".into(),
    });
    let init: Map<String, Value> = spec
        .init
        .iter()
        .map(|(k, st)| {
            (
                k.clone(),
                json!({"value": s(&st.value), "version": st.version}),
            )
        })
        .collect();
    out.push_str(",\n \"init\":");
    out.push_str(&Value::Object(init).to_string());
    out.push_str(",\n \"ops\":[");
    for (i, o) in ops.iter().enumerate() {
        let mut m = Map::new();
        m.insert("id".into(), json!(o.id));
        m.insert("client".into(), json!(o.client));
        m.insert("key".into(), json!(o.key));
        let (f, value) = match &o.input {
            KvInput::Get => ("get", None),
            KvInput::Put { value } => ("put", Some(value)),
            KvInput::Append { value } => ("append", Some(value)),
            KvInput::Cas { expect, value } => {
                m.insert("expect".into(), s(expect));
                ("cas", Some(value))
            }
            KvInput::Cput {
                expect_version,
                value,
            } => {
                m.insert("expect_version".into(), json!(expect_version));
                ("cput", Some(value))
            }
        };
        m.insert("f".into(), json!(f));
        if let Some(v) = value {
            m.insert("value".into(), json!(&**v));
        }
        m.insert("call".into(), json!(o.invoke));
        if let Some(r) = o.ret {
            m.insert("ret".into(), json!(r));
        }
        if let Some(out_) = &o.output {
            let mut om = Map::new();
            let ver = match out_ {
                KvOutput::Get { value, version } => {
                    om.insert("value".into(), s(value));
                    version
                }
                KvOutput::Put { version } => version,
                KvOutput::Cond { ok, version } => {
                    om.insert("ok".into(), json!(ok));
                    version
                }
            };
            if let Some(v) = ver {
                om.insert("version".into(), json!(v));
            }
            m.insert("out".into(), Value::Object(om));
        }
        out.push_str(if i == 0 { "\n  " } else { ",\n  " });
        out.push_str(&Value::Object(m).to_string());
    }
    out.push_str("\n ]}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DOC: &str = r#"{"format":"kvhist/1","init":{"x":{"value":"0","version":2}},"ops":[
        {"id":0,"client":0,"key":"x","f":"put","value":"1","call":0,"ret":10,"out":{"version":3}},
        {"id":1,"client":1,"key":"x","f":"cas","expect":null,"value":"2","call":1,"ret":9,"out":{"ok":false}},
        {"id":2,"client":2,"key":"x","f":"cput","expect_version":3,"value":"3","call":11},
        {"id":3,"client":3,"key":"y","f":"get","call":12,"ret":13,"out":{"value":null,"version":0}}]}"#;

    #[test]
    fn parses_the_format() {
        let h = parse_kvhist(DOC).expect("parse");
        assert_eq!(h.ops.len(), 4);
        assert!(h.spec.track_versions);
        assert_eq!(h.spec.init("x").version, 2);
        assert_eq!(h.ops[2].output, None);
        assert_eq!(h.ops[2].ret, None);
        assert_eq!(
            h.spec
                .claim(&h.ops[0].input, h.ops[0].output.as_ref().unwrap()),
            Claim::Produced(3)
        );
        assert!(h
            .spec
            .is_read_only(&h.ops[1].input, h.ops[1].output.as_ref()));
    }

    #[test]
    fn steps_follow_the_semantics() {
        let spec = KvSpec {
            init: BTreeMap::new(),
            track_versions: true,
        };
        let s0 = spec.init("k");
        let v = |x: &str| Val::from(x);
        let put = KvInput::Put { value: v("a") };
        let Next::One(s1) = spec.step(&s0, &put, Some(&KvOutput::Put { version: Some(1) })) else {
            panic!("put must apply");
        };
        assert_eq!(s1.version, 1);
        assert!(!spec
            .step(&s0, &put, Some(&KvOutput::Put { version: Some(2) }))
            .is_legal());
        let cas = KvInput::Cas {
            expect: Some(v("a")),
            value: v("b"),
        };
        assert!(spec
            .step(
                &s1,
                &cas,
                Some(&KvOutput::Cond {
                    ok: true,
                    version: None
                })
            )
            .is_legal());
        assert!(!spec
            .step(
                &s0,
                &cas,
                Some(&KvOutput::Cond {
                    ok: true,
                    version: None
                })
            )
            .is_legal());
        // An unknown cas applies only where its comparison holds.
        assert_eq!(spec.step(&s0, &cas, None), Next::One(s0.clone()));
        let cput = KvInput::Cput {
            expect_version: 0,
            value: v("c"),
        };
        assert!(spec
            .step(
                &s0,
                &cput,
                Some(&KvOutput::Cond {
                    ok: true,
                    version: Some(1)
                })
            )
            .is_legal());
        assert!(!spec
            .step(
                &s1,
                &cput,
                Some(&KvOutput::Cond {
                    ok: true,
                    version: None
                })
            )
            .is_legal());
    }

    #[test]
    fn errors_are_one_line() {
        for bad in [
            "",
            "{",
            "[]",
            "{\"ops\":[{}]}",
            "{\"ops\":[{\"client\":-1}]}",
            "{\"ops\":5}",
        ] {
            let e = parse_kvhist(bad).expect_err(bad);
            assert!(!e.contains('\n') && !e.is_empty(), "{e:?}");
        }
    }

    #[test]
    fn errors_name_the_json_path_of_the_bad_field() {
        let no_value = r#"{"ops":[{"client":0,"key":"x","f":"get","call":0,"ret":1,"out":{}}]}"#;
        assert_eq!(
            parse_kvhist(no_value).expect_err("get without out.value"),
            "ops[0]: a get's out needs \"value\" (a string, or null for absent)"
        );
        let bad_version = r#"{"ops":[
            {"client":0,"key":"x","f":"put","value":"1","call":0,"ret":1,"out":{}},
            {"client":0,"key":"x","f":"put","value":"1","call":2,"ret":3,"out":{"version":-1}}]}"#;
        let e = parse_kvhist(bad_version).expect_err("negative version");
        assert!(e.starts_with("ops[1].out.version: invalid value"), "{e}");
        let no_client = r#"{"ops":[{"key":"x","f":"get","call":0}]}"#;
        let e = parse_kvhist(no_client).expect_err("missing client");
        assert!(e.starts_with("ops[0]: missing field `client`"), "{e}");
        let bad_f = r#"{"ops":[{"client":0,"key":"x","f":"incr","call":0}]}"#;
        let e = parse_kvhist(bad_f).expect_err("unknown f");
        assert!(e.starts_with("ops[0].f: unknown variant `incr`"), "{e}");
        let backwards = r#"{"ops":[{"client":0,"key":"x","f":"get","call":9,"ret":5}]}"#;
        assert_eq!(
            parse_kvhist(backwards).expect_err("ret before call"),
            "ops[0]: \"ret\" (5) is before \"call\" (9)"
        );
        let other = r#"{"format":"kvhist/2","ops":[]}"#;
        assert!(parse_kvhist(other)
            .expect_err("format")
            .contains("kvhist/2"));
    }

    #[test]
    fn free_form_fields_are_ignored() {
        let doc = r#"{"meta":{"expected":"linearizable","args":[1,2]},"ops":[
            {"id":"a-string","client":0,"key":"x","f":"get","call":0,"ret":1,"out":{"value":null},"note":"x"}]}"#;
        let h = parse_kvhist(doc).expect("parse");
        assert_eq!(h.expected.as_deref(), Some("linearizable"));
        assert_eq!(h.ops[0].id, 0);
        assert!(!h.spec.track_versions);
    }

    /// What a reader gathered, as text (for comparing the two readers).
    fn gathered(text: &str, reader: Reader) -> Option<String> {
        read_by(text, reader).map(|g| {
            format!(
                "{:?}",
                (g.ops, g.init, g.expected, g.track, g.format_ok, g.seen_ops)
            )
        })
    }

    /// Documents the hand-written reader gives up on or must read exactly as
    /// serde does.
    const ODD: &[&str] = &[
        r#"{"ops":[{"id":-3,"client":0,"key":"x","f":"get","call":-5,"ret":-1,"out":{"value":null}}]}"#,
        r#"{"ops":[{"id":1.5,"client":0,"key":"x","f":"get","call":0}]}"#,
        r#"{"ops":[{"id":"a","client":0,"key":"x","f":"get","call":0,"zz":[1,{"a":[true,false,null]}]}]}"#,
        r#"{"ops":[{"client":0,"client":1,"key":"x","f":"get","call":0}]}"#,
        r#"{"ops":[{"client":0,"key":"x\n","f":"get","call":0}]}"#,
        r#"{"ops":[{"client":0,"key":"x","f":"get","call":01}]}"#,
        r#"{"ops":[{"client":0,"key":"x","f":"get","call":-0}]}"#,
        r#"{"ops":[{"client":18446744073709551615,"key":"x","f":"get","call":-9223372036854775808}]}"#,
        r#"{"ops":[{"client":18446744073709551616,"key":"x","f":"get","call":0}]}"#,
        r#"{"ops":[{"client":0,"key":"x","f":"cas","expect":null,"value":null,"call":0,"ret":null,"out":null}]}"#,
        r#"{"init":{"x":{"value":"a","version":1},"x":{"value":null}},"ops":[]}"#,
        r#"{"meta":{"expected":5},"ops":[],"format":null}"#,
        r#"{"meta":{"expected":"linearizable","expected":"x"},"ops":[]}"#,
        r#" { "ops" : [ ] } x"#,
        r#"{"ops":[],}"#,
        r#"{"ops":[{"client":0,"key":"x","f":"get","call":0,}]}"#,
    ];

    #[test]
    fn the_hand_written_reader_reads_as_serde_does() {
        for doc in ODD.iter().copied().chain([DOC]) {
            if let Some(scanned) = gathered(doc, Reader::Scan) {
                assert_eq!(Some(scanned), gathered(doc, Reader::Serde), "{doc}");
            }
        }
        // The common case is read by the hand-written reader.
        assert!(gathered(DOC, Reader::Scan).is_some());
        let g = crate::gen::generate(&crate::gen::GenOptions {
            seed: 5,
            ops: 300,
            clients: 8,
            keys: 3,
            unknown_writes: 0.1,
            unknown_reads: 0.1,
            ..crate::gen::GenOptions::default()
        });
        let text = to_kvhist(&g.spec, &g.ops, Some("linearizable"));
        let scanned = gathered(&text, Reader::Scan);
        assert!(scanned.is_some());
        assert_eq!(scanned, gathered(&text, Reader::Serde));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn the_readers_agree_on_mangled_input(cut in 0usize..600, at in 0usize..600, junk in "[\\[\\]{}\",:a-z0-9 .e-]{0,6}") {
            let mut t = DOC.to_string();
            if t.is_char_boundary(at.min(t.len())) {
                t.insert_str(at.min(t.len()), &junk);
            }
            let s: String = t.chars().take(cut.max(1) + 300).collect();
            for doc in [&t, &s] {
                if let Some(scanned) = gathered(doc, Reader::Scan) {
                    prop_assert_eq!(Some(scanned), gathered(doc, Reader::Serde), "{}", doc);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn never_panics_on_mangled_input(cut in 0usize..600, at in 0usize..600, junk in "[\\[\\]{}\",:a-z0-9 -]{0,6}") {
            let mut s: String = DOC.chars().take(cut.max(1)).collect();
            let at = at.min(s.len());
            if s.is_char_boundary(at) {
                s.insert_str(at, &junk);
            }
            let _ = parse_kvhist(&s);
            let mut t = DOC.to_string();
            if t.is_char_boundary(at.min(t.len())) {
                t.insert_str(at.min(t.len()), &junk);
            }
            let _ = parse_kvhist(&t);
        }
    }
}
