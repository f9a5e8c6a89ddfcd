//! The script format, version 1: a JSON document of steps run in order.
//!
//! Every step is an object with exactly one key, the step's kind:
//! a request in the service's vocabulary (`put_blob`, `get_blob`, ...) whose
//! object holds the request's parameters and its `expect`ation; `advance`
//! (move the server's and the client's clocks); `crash_server`;
//! `drop_next_reply`. Parsing goes through `serde_path_to_error` with every
//! struct denying unknown fields, and a second pass ([`Script::validate`])
//! checks what serde cannot (value syntax, names used before capture), so a
//! malformed script names the step and the field.
//!
//! A new service adds its operations as new [`Step`] arms (a parameter
//! struct with an `expect: Expect` field, plus the request it sends in
//! `super::run`), and any new response field worth pinning as a field of
//! [`Expect`] and a [`Field`] a capture can bind.

use super::time::{parse_duration, parse_rfc1123};
use overcast_model::conditions::Millis;
use overcast_sim::clock::EPOCH_MS;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The one format this runner reads.
pub const FORMAT: &str = "overcast-script/1";

/// A conformance script.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Must be [`FORMAT`].
    pub format: String,
    /// What the script pins, one line.
    pub name: String,
    /// Where the expected answers come from (a SPEC section, an issue, a seed).
    #[serde(default)]
    pub source: String,
    /// Containers that exist from the start (provisioned, not logged).
    #[serde(default)]
    pub containers: Vec<String>,
    /// Seeded model bugs switched on (names of `ModelBugs`), to show a script catches one.
    #[serde(default)]
    pub bugs: Vec<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// One step.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Create Container.
    CreateContainer(CreateContainer),
    /// Put Blob (an upsert: 201 created / 200 replaced).
    PutBlob(BlobOp),
    /// Get Blob (read conditions, SPEC §1.1.4).
    GetBlob(BlobOp),
    /// Delete Blob (write conditions).
    DeleteBlob(BlobOp),
    /// Move the clocks forward.
    Advance(Advance),
    /// Crash the server (a process crash: what it appended survives), restart it
    /// after `down`; it recovers from its write-ahead log.
    CrashServer(CrashServer),
    /// The server's reply to the next request attempt is lost on the way back.
    DropNextReply(DropNextReply),
}

/// `create_container`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateContainer {
    /// The container.
    pub container: String,
    /// The expected answer.
    pub expect: Expect,
}

/// One date expression or several (several values in one header).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dates {
    /// One value.
    One(String),
    /// Several values.
    Many(Vec<String>),
}

impl Dates {
    /// The expressions, in order.
    pub fn exprs(&self) -> Vec<&str> {
        match self {
            Dates::One(s) => vec![s.as_str()],
            Dates::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// `put_blob`, `get_blob`, `delete_blob`: a Blob request with its
/// conditional headers, written as header values.
///
/// `if_match` / `if_none_match`: `*`, or a comma-separated list of ETags, each
/// a literal (quotes optional) or a captured `$name`. Dates: one date
/// expression, or a list of them (several values in one header).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobOp {
    /// The container.
    pub container: String,
    /// The blob name.
    pub blob: String,
    /// The content: required by `put_blob`, refused by the others.
    #[serde(default)]
    pub body: Option<String>,
    /// `If-Match`.
    #[serde(default)]
    pub if_match: Option<String>,
    /// `If-None-Match`.
    #[serde(default)]
    pub if_none_match: Option<String>,
    /// `If-Modified-Since`.
    #[serde(default)]
    pub if_modified_since: Option<Dates>,
    /// `If-Unmodified-Since`.
    #[serde(default)]
    pub if_unmodified_since: Option<Dates>,
    /// The expected answer.
    pub expect: Expect,
}

/// `advance`: both amounts are durations (`1500ms`, `2s`, `1min`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Advance {
    /// Added to the server clock.
    #[serde(default)]
    pub server: Option<String>,
    /// Added to the scripted client's own clock (read by SDKs that keep time of
    /// their own, e.g. a change feed processor host; the Blob SDK reads none).
    #[serde(default)]
    pub client: Option<String>,
}

/// `crash_server`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashServer {
    /// How long it stays down (simulated time, which the clocks see), default 0.
    #[serde(default)]
    pub down: Option<String>,
}

/// `drop_next_reply`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropNextReply {}

/// What a request step expects. Every field is optional: only what is given
/// is checked. `any_of` lists alternatives (SPEC's AMBIG rows): the step
/// passes if the top-level fields hold and one alternative holds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The HTTP status the caller sees.
    #[serde(default)]
    pub status: Option<u16>,
    /// The `x-ms-error-code`.
    #[serde(default)]
    pub error_code: Option<String>,
    /// True: the SDK reports the outcome as unknown (a write that may or may not
    /// have committed); false: a known answer.
    #[serde(default)]
    pub unknown_outcome: Option<bool>,
    /// How many attempts the SDK made.
    #[serde(default)]
    pub attempts: Option<usize>,
    /// The ETag: `fresh`, `same as $x`, `different from $x`, `present`,
    /// `absent`, or a literal ETag.
    #[serde(default)]
    pub etag: Option<String>,
    /// Last-Modified (compared at 1 s): `same as $t`, `different from $t`,
    /// `present`, `absent`, or a date expression.
    #[serde(default)]
    pub last_modified: Option<String>,
    /// The body, exactly.
    #[serde(default)]
    pub body: Option<String>,
    /// True: the answer carries no body.
    #[serde(default)]
    pub no_body: Option<bool>,
    /// Binds response fields to names for later steps: `{"etag": "$e1"}`.
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
    /// Alternatives: the step passes if one of them holds (with the fields above).
    #[serde(default)]
    pub any_of: Vec<Expect>,
    /// Why there are alternatives (e.g. `AMBIG-2`); not checked.
    #[serde(default)]
    pub note: Option<String>,
}

/// A response field a capture can bind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Field {
    /// The ETag.
    Etag,
    /// Last-Modified.
    LastModified,
}

impl Field {
    /// The field called `name` in a script.
    pub fn parse(name: &str) -> Option<Field> {
        match name {
            "etag" => Some(Field::Etag),
            "last_modified" => Some(Field::LastModified),
            _ => None,
        }
    }
}

/// How a field is compared with the answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Compare {
    /// Never seen before for this resource (ETags).
    Fresh,
    /// Equal to a captured value.
    SameAs(String),
    /// Not equal to a captured value.
    DifferentFrom(String),
    /// The field is there.
    Present,
    /// The field is not there.
    Absent,
    /// Equal to this literal (an ETag, or a date expression for dates).
    Literal(String),
}

impl Compare {
    /// Parses a comparison of `field`.
    pub fn parse(s: &str, field: Field) -> Result<Compare, String> {
        let s = s.trim();
        let var = |rest: &str| -> Result<String, String> {
            let rest = rest.trim();
            if rest.starts_with('$') && rest.len() > 1 && !rest.contains(char::is_whitespace) {
                Ok(rest.to_string())
            } else {
                Err(format!("`{s}`: expected a captured name like $e1 after it"))
            }
        };
        Ok(match s {
            "fresh" if field == Field::Etag => Compare::Fresh,
            "fresh" => return Err("`fresh` applies to ETags only".into()),
            "present" => Compare::Present,
            "absent" => Compare::Absent,
            _ => {
                if let Some(rest) = s.strip_prefix("same as ") {
                    Compare::SameAs(var(rest)?)
                } else if let Some(rest) = s.strip_prefix("different from ") {
                    Compare::DifferentFrom(var(rest)?)
                } else {
                    if field == Field::LastModified {
                        DateExpr::parse(s)?;
                    }
                    Compare::Literal(s.to_string())
                }
            }
        })
    }
}

/// A date in a script: a base (`$t1`: a captured Last-Modified; `start`: the
/// simulation's start, Thu, 01 Jan 2026 00:00:00 GMT; or an RFC 1123 date)
/// with an optional offset (`$t1 - 1s`, `start + 90s`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DateExpr {
    /// A captured name, or `None` for a fixed date.
    pub var: Option<String>,
    /// The fixed date (ms since the epoch), when `var` is `None`.
    pub fixed: Millis,
    /// Added to the base, ms.
    pub offset_ms: i64,
}

impl DateExpr {
    /// Parses a date expression.
    pub fn parse(s: &str) -> Result<DateExpr, String> {
        let s = s.trim();
        // The offset is the last ` + N` / ` - N` (RFC 1123 dates hold no ` + `).
        let (base, offset_ms) = match s.rfind(" + ").or_else(|| s.rfind(" - ")) {
            Some(i) => {
                let sign = if &s[i..i + 3] == " + " { 1 } else { -1 };
                (s[..i].trim(), sign * parse_duration(&s[i + 3..])?)
            }
            None => (s, 0),
        };
        if base.starts_with('$') {
            if base.len() < 2 || base.contains(char::is_whitespace) {
                return Err(format!("`{s}`: a captured name like $t1 has no spaces"));
            }
            return Ok(DateExpr {
                var: Some(base.to_string()),
                fixed: 0,
                offset_ms,
            });
        }
        let fixed = if base == "start" {
            EPOCH_MS
        } else {
            parse_rfc1123(base)?
        };
        Ok(DateExpr {
            var: None,
            fixed,
            offset_ms,
        })
    }
}

/// A value captured from an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Captured {
    /// An ETag as the server sent it.
    Etag(String),
    /// A Last-Modified (server ms).
    Time(Millis),
}

impl fmt::Display for Captured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Captured::Etag(e) => f.write_str(e),
            Captured::Time(t) => f.write_str(&super::time::format_rfc1123(*t)),
        }
    }
}

/// A script that could not be read: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// The step (1-based), when the fault is inside one.
    pub step: Option<usize>,
    /// The field, as a path inside the step (or the document), e.g. `put_blob.expect.status`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Some(n) => write!(f, "step {n}, field `{}`: {}", self.field, self.message),
            None if self.field.is_empty() || self.field == "." => f.write_str(&self.message),
            None => write!(f, "field `{}`: {}", self.field, self.message),
        }
    }
}

/// Splits a serde path like `steps[3].put_blob.expect` into the step (1-based)
/// and the path inside it.
fn split_path(path: &str) -> (Option<usize>, String) {
    if let Some(rest) = path.strip_prefix("steps[") {
        if let Some(end) = rest.find(']') {
            if let Ok(i) = rest[..end].parse::<usize>() {
                let inner = rest[end + 1..].trim_start_matches('.');
                return (Some(i + 1), inner.to_string());
            }
        }
    }
    (None, path.to_string())
}

/// Parses and validates a script.
pub fn parse(text: &str) -> Result<Script, Malformed> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let script: Script = serde_path_to_error::deserialize(de).map_err(|e| {
        let (step, field) = split_path(&e.path().to_string());
        let mut message = e.inner().to_string();
        // serde_json appends " at line L column C"; keep it, it helps find the spot.
        if message.is_empty() {
            message = "invalid".into();
        }
        Malformed {
            step,
            field,
            message,
        }
    })?;
    script.validate()?;
    Ok(script)
}

/// What a name was captured as, for checking uses before the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Etag,
    Time,
}

impl Script {
    /// Checks what serde does not: the format tag, value syntax, captured names
    /// used only after their capture and as the right kind, one capture per name.
    pub fn validate(&self) -> Result<(), Malformed> {
        if self.format != FORMAT {
            return Err(Malformed {
                step: None,
                field: "format".into(),
                message: format!("`{}` is not `{FORMAT}`", self.format),
            });
        }
        for (i, b) in self.bugs.iter().enumerate() {
            if !overcast_model::bugs::ModelBugs::default().set(b) {
                return Err(Malformed {
                    step: None,
                    field: format!("bugs[{i}]"),
                    message: format!(
                        "no model bug `{b}` (known: {})",
                        overcast_model::bugs::ModelBugs::NAMES.join(", ")
                    ),
                });
            }
        }
        let mut names: BTreeMap<String, Kind> = BTreeMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            let at = |field: &str, message: String| Malformed {
                step: Some(i + 1),
                field: field.to_string(),
                message,
            };
            let kind = step.kind();
            match step {
                Step::Advance(a) => {
                    for (f, v) in [("server", &a.server), ("client", &a.client)] {
                        if let Some(v) = v {
                            let ms =
                                parse_duration(v).map_err(|m| at(&format!("{kind}.{f}"), m))?;
                            if ms < 0 {
                                return Err(at(
                                    &format!("{kind}.{f}"),
                                    "clocks only move forward".into(),
                                ));
                            }
                        }
                    }
                }
                Step::CrashServer(c) => {
                    if let Some(d) = &c.down {
                        parse_duration(d).map_err(|m| at(&format!("{kind}.down"), m))?;
                    }
                }
                Step::PutBlob(op) if op.body.is_none() => {
                    return Err(at(
                        &format!("{kind}.body"),
                        "missing: put_blob takes a body".into(),
                    ));
                }
                Step::GetBlob(op) | Step::DeleteBlob(op) if op.body.is_some() => {
                    return Err(at(&format!("{kind}.body"), format!("{kind} takes no body")));
                }
                _ => {}
            }
            if let Some(h) = step.blob_op() {
                for (f, v) in [
                    ("if_match", &h.if_match),
                    ("if_none_match", &h.if_none_match),
                ] {
                    let Some(v) = v else { continue };
                    for token in etag_tokens(v) {
                        if token.starts_with('$') {
                            use_name(&names, token, Kind::Etag)
                                .map_err(|m| at(&format!("{kind}.{f}"), m))?;
                        } else if token == "*" && v.trim() != "*" {
                            return Err(at(
                                &format!("{kind}.{f}"),
                                "`*` stands alone in the header".into(),
                            ));
                        }
                    }
                }
                for (f, v) in [
                    ("if_modified_since", &h.if_modified_since),
                    ("if_unmodified_since", &h.if_unmodified_since),
                ] {
                    let Some(v) = v else { continue };
                    for e in v.exprs() {
                        let d = DateExpr::parse(e).map_err(|m| at(&format!("{kind}.{f}"), m))?;
                        if let Some(n) = &d.var {
                            use_name(&names, n, Kind::Time)
                                .map_err(|m| at(&format!("{kind}.{f}"), m))?;
                        }
                    }
                }
            }
            if let Some(expect) = step.expect() {
                validate_expect(expect, &format!("{kind}.expect"), &mut names)
                    .map_err(|(f, m)| at(&f, m))?;
            }
        }
        Ok(())
    }
}

/// The tokens of an `If-Match` / `If-None-Match` value.
pub fn etag_tokens(v: &str) -> Vec<&str> {
    v.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

fn use_name(names: &BTreeMap<String, Kind>, name: &str, want: Kind) -> Result<(), String> {
    match names.get(name) {
        None => Err(format!("{name} is used before any step captures it")),
        Some(k) if *k != want => Err(format!(
            "{name} holds {}, not {}",
            if *k == Kind::Etag {
                "an ETag"
            } else {
                "a date"
            },
            if want == Kind::Etag {
                "an ETag"
            } else {
                "a date"
            }
        )),
        Some(_) => Ok(()),
    }
}

fn validate_expect(
    e: &Expect,
    path: &str,
    names: &mut BTreeMap<String, Kind>,
) -> Result<(), (String, String)> {
    let check = |field: Field,
                 v: &Option<String>,
                 f: &str,
                 names: &BTreeMap<String, Kind>|
     -> Result<(), (String, String)> {
        let Some(v) = v else { return Ok(()) };
        let at = |m| (format!("{path}.{f}"), m);
        let kind = if field == Field::Etag {
            Kind::Etag
        } else {
            Kind::Time
        };
        match Compare::parse(v, field).map_err(at)? {
            Compare::SameAs(n) | Compare::DifferentFrom(n) => {
                use_name(names, &n, kind).map_err(at)?
            }
            Compare::Literal(l) if field == Field::LastModified => {
                if let Some(n) = DateExpr::parse(&l).map_err(at)?.var {
                    use_name(names, &n, kind).map_err(at)?
                }
            }
            _ => {}
        }
        Ok(())
    };
    check(Field::Etag, &e.etag, "etag", names)?;
    check(
        Field::LastModified,
        &e.last_modified,
        "last_modified",
        names,
    )?;
    for (i, alt) in e.any_of.iter().enumerate() {
        if !alt.any_of.is_empty() {
            return Err((
                format!("{path}.any_of[{i}].any_of"),
                "alternatives do not nest".into(),
            ));
        }
        validate_expect(alt, &format!("{path}.any_of[{i}]"), names)?;
    }
    for (field, name) in &e.capture {
        let at = |m: String| (format!("{path}.capture.{field}"), m);
        let f = Field::parse(field).ok_or_else(|| {
            at(format!(
                "no field `{field}` to capture (etag, last_modified)"
            ))
        })?;
        if !name.starts_with('$') || name.len() < 2 || name.contains(char::is_whitespace) {
            return Err(at(format!("`{name}`: a name starts with $, like $e1")));
        }
        if names.contains_key(name) {
            return Err(at(format!("{name} is captured twice")));
        }
        let kind = if f == Field::Etag {
            Kind::Etag
        } else {
            Kind::Time
        };
        names.insert(name.clone(), kind);
    }
    Ok(())
}

impl Step {
    /// The step's kind as written in scripts (`put_blob`, `advance`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Step::CreateContainer(_) => "create_container",
            Step::PutBlob(_) => "put_blob",
            Step::GetBlob(_) => "get_blob",
            Step::DeleteBlob(_) => "delete_blob",
            Step::Advance(_) => "advance",
            Step::CrashServer(_) => "crash_server",
            Step::DropNextReply(_) => "drop_next_reply",
        }
    }

    /// The expectation of a request step.
    pub fn expect(&self) -> Option<&Expect> {
        match self {
            Step::CreateContainer(s) => Some(&s.expect),
            Step::PutBlob(s) | Step::GetBlob(s) | Step::DeleteBlob(s) => Some(&s.expect),
            Step::Advance(_) | Step::CrashServer(_) | Step::DropNextReply(_) => None,
        }
    }

    /// The Blob request of a Blob step.
    pub fn blob_op(&self) -> Option<&BlobOp> {
        match self {
            Step::PutBlob(s) | Step::GetBlob(s) | Step::DeleteBlob(s) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(steps: &str) -> String {
        format!(r#"{{"format": "overcast-script/1", "name": "t", "steps": [{steps}]}}"#)
    }

    #[test]
    fn an_unknown_field_names_its_step_and_path() {
        let text = script(
            r#"{"create_container": {"container": "c", "expect": {"status": 201}}},
               {"put_blob": {"container": "c", "blob": "b", "body": "x", "expect": {"stauts": 201}}}"#,
        );
        let e = parse(&text).unwrap_err();
        assert_eq!(e.step, Some(2));
        assert_eq!(e.field, "put_blob.expect.stauts");
        assert!(e.message.contains("stauts"), "{e}");
    }

    #[test]
    fn a_name_used_before_its_capture_is_malformed() {
        let text = script(
            r#"{"get_blob": {"container": "c", "blob": "b", "if_match": "$e1", "expect": {"status": 200}}}"#,
        );
        let e = parse(&text).unwrap_err();
        assert_eq!((e.step, e.field.as_str()), (Some(1), "get_blob.if_match"));
    }

    #[test]
    fn a_bad_date_is_malformed() {
        let text = script(
            r#"{"get_blob": {"container": "c", "blob": "b", "if_modified_since": "yesterday", "expect": {"status": 200}}}"#,
        );
        let e = parse(&text).unwrap_err();
        assert_eq!(
            (e.step, e.field.as_str()),
            (Some(1), "get_blob.if_modified_since")
        );
    }

    #[test]
    fn a_put_needs_a_body_and_a_get_refuses_one() {
        let put = script(r#"{"put_blob": {"container": "c", "blob": "b", "expect": {}}}"#);
        let e = parse(&put).unwrap_err();
        assert_eq!((e.step, e.field.as_str()), (Some(1), "put_blob.body"));
        let get =
            script(r#"{"get_blob": {"container": "c", "blob": "b", "body": "x", "expect": {}}}"#);
        let e = parse(&get).unwrap_err();
        assert_eq!((e.step, e.field.as_str()), (Some(1), "get_blob.body"));
    }

    #[test]
    fn date_expressions_take_a_base_and_an_offset() {
        assert_eq!(
            DateExpr::parse("$t1 - 1s"),
            Ok(DateExpr {
                var: Some("$t1".into()),
                fixed: 0,
                offset_ms: -1000
            })
        );
        assert_eq!(DateExpr::parse("start + 2s").map(|d| d.fixed), Ok(EPOCH_MS));
        assert_eq!(
            DateExpr::parse("Thu, 01 Jan 2026 00:00:05 GMT").map(|d| d.fixed),
            Ok(EPOCH_MS + 5000)
        );
    }
}
