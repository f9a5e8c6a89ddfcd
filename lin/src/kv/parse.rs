//! Reading and writing kvhist/1 documents: the serde reader with paths in
//! its errors, the fast hand-written reader ([`scan`]) tried first,
//! and the writer.

use super::*;

mod scan;

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
pub(super) struct DocIn<'a> {
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
pub(super) struct Str<'a>(Cow<'a, str>);

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
pub(super) struct AnyId(Option<u64>);

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
pub(super) struct MetaIn {
    #[serde(default, deserialize_with = "string_or_nothing")]
    expected: Option<String>,
}

/// One entry of `init`.
#[derive(Deserialize)]
pub(super) struct InitIn<'a> {
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
pub(super) enum FIn {
    Get,
    Put,
    Cas,
    Cput,
    Append,
}

/// One operation as written.
#[derive(Deserialize)]
pub(super) struct OpIn<'a> {
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
pub(super) struct OutIn<'a> {
    /// Outer `None`: absent; `Some(None)`: `null` (the key absent).
    #[serde(default, borrow, deserialize_with = "present")]
    value: Option<Option<Str<'a>>>,
    #[serde(default)]
    version: Option<u64>,
    #[serde(default)]
    ok: Option<bool>,
}

/// A field that is present (possibly `null`): `Some(inner)`.
pub(super) fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Any JSON value; `Some` only for a string (`meta` is free-form).
pub(super) fn string_or_nothing<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    })
}

/// Shares equal values (histories repeat a value in every read of it).
#[derive(Default)]
pub(super) struct Interner(FxHashSet<Val>);

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
pub(super) struct Gathered {
    pub(super) intern: Interner,
    pub(super) track: bool,
    pub(super) ops: Vec<Operation<KvInput, KvOutput>>,
    pub(super) init: BTreeMap<String, KvState>,
    pub(super) expected: Option<String>,
    pub(super) format_ok: bool,
    pub(super) seen_ops: bool,
}

/// serde's fast reader: one pass, every operation converted as it is read
/// (no intermediate copy of the `ops` array); `None` on any error.
pub(super) fn read_serde(text: &str, g: &mut Gathered) -> Option<()> {
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
pub(super) fn parse_fast(text: &str) -> Option<KvHistory> {
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

/// The two fast readers of [`parse_kvhist`]'s fast path.
#[derive(Clone, Copy, Debug)]
pub enum Reader {
    /// The hand-written one ([`scan`]), which gives up on what it does not
    /// handle exactly as serde would.
    Scan,
    /// serde's.
    Serde,
}

/// What `reader` gathers from `text`, written out (operations, initial
/// state, expectation and flags), so that the two readers can be compared;
/// `None` on any error, or when the hand-written reader gives up.
pub fn gathered_by(text: &str, reader: Reader) -> Option<String> {
    read_by(text, reader).map(|g| {
        format!(
            "{:?}",
            (g.ops, g.init, g.expected, g.track, g.format_ok, g.seen_ops)
        )
    })
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
pub(super) fn gathered_history(g: Gathered) -> Option<KvHistory> {
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
pub(super) fn parse_with_paths(text: &str) -> Result<KvHistory, String> {
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
pub(super) fn op_from(
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
