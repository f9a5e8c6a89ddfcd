//! The key-value register spec of the kvhist/1 format
//! (`../shared/histories/FORMAT.md`) and its parser.
//!
//! Each key is an independent register with a value (or absent) and a
//! version; `get`, `put`, `cas` (compare-and-set by value), `cput`
//! (conditional put by version) and the optional `append`.

use super::spec::{Claim, Next, Spec};
use super::Operation;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

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

fn int(v: &Value) -> Option<i64> {
    v.as_i64()
}

/// Parses a kvhist/1 document. Never panics; the error is one line saying
/// what is wrong and where (e.g. `ops[3]: "ret" (5) is before "call" (9)`).
pub fn parse_kvhist(text: &str) -> Result<KvHistory, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let top = doc.as_object().ok_or("the document is not a JSON object")?;
    match top.get("format") {
        None => {}
        Some(Value::String(s)) if s == "kvhist/1" => {}
        Some(other) => {
            return Err(format!(
                "unsupported format {other} (expected \"kvhist/1\")"
            ))
        }
    }
    let mut intern: HashMap<String, Val> = HashMap::new();
    let mut val = |s: &str| -> Val {
        if let Some(v) = intern.get(s) {
            return v.clone();
        }
        let v: Val = Val::from(s);
        intern.insert(s.to_string(), v.clone());
        v
    };
    let mut track = false;
    let mut init = BTreeMap::new();
    if let Some(iv) = top.get("init") {
        if !iv.is_null() {
            let io = iv.as_object().ok_or("\"init\" is not an object")?;
            for (k, s) in io {
                let so = s
                    .as_object()
                    .ok_or_else(|| format!("init[{k:?}] is not an object"))?;
                let value = match so.get("value") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(x)) => Some(val(x)),
                    Some(o) => {
                        return Err(format!("init[{k:?}].value is not a string or null: {o}"))
                    }
                };
                let version = match so.get("version") {
                    None | Some(Value::Null) => 0,
                    Some(v) => v.as_u64().ok_or_else(|| {
                        format!("init[{k:?}].version is not a non-negative integer: {v}")
                    })?,
                };
                track |= version != 0;
                init.insert(k.clone(), KvState { value, version });
            }
        }
    }
    let expected = top
        .get("meta")
        .and_then(|m| m.get("expected"))
        .and_then(|e| e.as_str())
        .map(str::to_string);
    let arr = match top.get("ops") {
        Some(Value::Array(a)) => a,
        Some(_) => return Err("\"ops\" is not an array".into()),
        None => return Err("missing \"ops\"".into()),
    };
    let mut ops = Vec::with_capacity(arr.len());
    for (i, o) in arr.iter().enumerate() {
        let o = o
            .as_object()
            .ok_or_else(|| format!("ops[{i}] is not an object"))?;
        let (op, mentions) = parse_op(i, o, &mut val)?;
        track |= mentions;
        ops.push(op);
    }
    Ok(KvHistory {
        ops,
        spec: KvSpec {
            init,
            track_versions: track,
        },
        expected,
    })
}

fn parse_op(
    i: usize,
    o: &Map<String, Value>,
    val: &mut impl FnMut(&str) -> Val,
) -> Result<(Operation<KvInput, KvOutput>, bool), String> {
    let field = |name: &str| o.get(name).filter(|v| !v.is_null());
    let client = match field("client") {
        Some(c) => c
            .as_u64()
            .ok_or_else(|| format!("ops[{i}]: \"client\" is not a non-negative integer: {c}"))?,
        None => return Err(format!("ops[{i}]: missing \"client\"")),
    };
    let key = match field("key") {
        Some(Value::String(k)) => k.clone(),
        Some(k) => return Err(format!("ops[{i}]: \"key\" is not a string: {k}")),
        None => return Err(format!("ops[{i}]: missing \"key\"")),
    };
    let f = match field("f") {
        Some(Value::String(f)) => f.as_str(),
        Some(f) => return Err(format!("ops[{i}]: \"f\" is not a string: {f}")),
        None => return Err(format!("ops[{i}]: missing \"f\"")),
    };
    let vres: Result<&str, String> = match field("value") {
        Some(Value::String(v)) => Ok(v.as_str()),
        Some(v) => Err(format!("ops[{i}]: \"value\" is not a string: {v}")),
        None => Err(format!("ops[{i}]: {f} needs a \"value\"")),
    };
    let mut mentions = false;
    let input = match f {
        "get" => KvInput::Get,
        "put" => KvInput::Put {
            value: val(vres.clone()?),
        },
        "append" => KvInput::Append {
            value: val(vres.clone()?),
        },
        "cas" => {
            let expect = match o.get("expect") {
                None => {
                    return Err(format!(
                        "ops[{i}]: cas needs \"expect\" (a string, or null for absent)"
                    ))
                }
                Some(Value::Null) => None,
                Some(Value::String(s)) => Some(val(s)),
                Some(e) => {
                    return Err(format!("ops[{i}]: \"expect\" is not a string or null: {e}"))
                }
            };
            KvInput::Cas {
                expect,
                value: val(vres.clone()?),
            }
        }
        "cput" => {
            mentions = true;
            let ev = match field("expect_version") {
                Some(v) => v.as_u64().ok_or_else(|| {
                    format!("ops[{i}]: \"expect_version\" is not a non-negative integer: {v}")
                })?,
                None => return Err(format!("ops[{i}]: cput needs \"expect_version\"")),
            };
            KvInput::Cput {
                expect_version: ev,
                value: val(vres.clone()?),
            }
        }
        other => {
            return Err(format!(
                "ops[{i}]: unknown \"f\" {other:?} (expected get, put, cas, cput or append)"
            ))
        }
    };
    let call = match field("call") {
        Some(c) => int(c).ok_or_else(|| format!("ops[{i}]: \"call\" is not an integer: {c}"))?,
        None => return Err(format!("ops[{i}]: missing \"call\"")),
    };
    let ret = match field("ret") {
        Some(r) => {
            let r = int(r).ok_or_else(|| format!("ops[{i}]: \"ret\" is not an integer: {r}"))?;
            if r < call {
                return Err(format!(
                    "ops[{i}]: \"ret\" ({r}) is before \"call\" ({call})"
                ));
            }
            Some(r)
        }
        None => None,
    };
    let output = match field("out") {
        None => None,
        Some(Value::Object(out)) => {
            if ret.is_none() {
                return Err(format!(
                    "ops[{i}]: has \"out\" but no \"ret\" (an answered op needs its return time)"
                ));
            }
            let version = match out.get("version").filter(|v| !v.is_null()) {
                None => None,
                Some(v) => {
                    mentions = true;
                    Some(v.as_u64().ok_or_else(|| {
                        format!("ops[{i}]: out.version is not a non-negative integer: {v}")
                    })?)
                }
            };
            Some(match f {
                "get" => {
                    let value = match out.get("value") {
                        None => {
                            return Err(format!(
                            "ops[{i}]: a get's out needs \"value\" (a string, or null for absent)"
                        ))
                        }
                        Some(Value::Null) => None,
                        Some(Value::String(s)) => Some(val(s)),
                        Some(v) => {
                            return Err(format!("ops[{i}]: out.value is not a string or null: {v}"))
                        }
                    };
                    KvOutput::Get { value, version }
                }
                "put" | "append" => KvOutput::Put { version },
                _ => {
                    let ok = match out.get("ok") {
                        Some(Value::Bool(b)) => *b,
                        Some(v) => return Err(format!("ops[{i}]: out.ok is not a boolean: {v}")),
                        None => return Err(format!("ops[{i}]: a {f}'s out needs \"ok\"")),
                    };
                    KvOutput::Cond { ok, version }
                }
            })
        }
        Some(v) => return Err(format!("ops[{i}]: \"out\" is not an object or null: {v}")),
    };
    let id = match o.get("id") {
        Some(v) => v.as_u64().unwrap_or(i as u64),
        None => i as u64,
    };
    Ok((
        Operation {
            id,
            client,
            key,
            input,
            invoke: call,
            ret,
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
