//! The `account` step (a multi-region Cosmos DB account whose requests go
//! through the multi-region SDK client), what `inject` may answer with, and
//! the checks that tie steps to the account before them: an injection's
//! `region` and a request's `regions` expectation name the account's regions.

use super::{Inject, Step, INJECTABLE};
use serde::{Deserialize, Serialize};

/// `account`: from this step on, the script's Cosmos requests go through the
/// multi-region client (`RegionClient`) against an account of these regions.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Account {
    /// The regions' names in the client's preferred order; the first is the
    /// write region.
    pub regions: Vec<String>,
    /// A multi-write account. The model's multi-region client serves
    /// single-write accounts only, so `true` is refused.
    #[serde(default)]
    pub multi_write: bool,
    /// The reads' consistency level, default `session`.
    #[serde(default)]
    pub consistency: Consistency,
    /// The write region of the account view the client starts with, when it
    /// is out of date (the write region moved since the client read the
    /// account): its first write goes there and meets 403/3. A region of
    /// `regions` other than the first.
    #[serde(default)]
    pub stale_write_region: Option<String>,
}

/// A consistency level the model's replicas serve (SPEC §4.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Consistency {
    /// The write region's primary, under its lease.
    Strong,
    /// Any region whose replica has applied the client's session token.
    #[default]
    Session,
    /// Any region.
    Eventual,
}

/// What an `inject` step answers with: a status, or no answer at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum InjectStatus {
    /// An HTTP status: one of [`INJECTABLE`].
    Code(u16),
    /// Not a status: see [`InjectEvent`].
    Event(InjectEvent),
}

/// A failure without a status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InjectEvent {
    /// The relay swallows the attempt: no answer comes, and the SDK's
    /// request timeout (6 s) runs out. The multi-region client takes a read's
    /// for a connection error (SPEC §4.1 row `HttpRequestException`); a write
    /// was sent, so its outcome is unknown (408); the single-region client
    /// retries a read's as a 410 (row 408).
    ConnectionError,
    /// The connect is refused (nothing listens at the server's address): the
    /// request never leaves the client, which retries it as a transport 410,
    /// a write too (SPEC §4.1 row 408: "not sent → 410 (retried)"). The
    /// single server's only, and every attempt alike: a connect knows an
    /// address, not the request it is for.
    ConnectionRefused,
}

impl InjectStatus {
    /// The status as written in a line (`503`, `connection_error`).
    pub fn describe(&self) -> String {
        match self {
            InjectStatus::Code(s) => s.to_string(),
            InjectStatus::Event(InjectEvent::ConnectionError) => "connection_error".into(),
            InjectStatus::Event(InjectEvent::ConnectionRefused) => "connection_refused".into(),
        }
    }
}

/// Checks an `inject` step on its own: a status the relay can answer with, a
/// sub-status and a retry-after that go with it, at least one attempt.
pub(super) fn validate_inject(j: &Inject) -> Result<(), (&'static str, String)> {
    let status = match j.status {
        InjectStatus::Code(s) => s,
        InjectStatus::Event(InjectEvent::ConnectionError) => {
            if j.sub_status != 0 || j.retry_after_ms.is_some() || j.forward {
                return Err((
                    "status",
                    "a connection error has no answer: no sub_status, retry_after_ms or forward"
                        .into(),
                ));
            }
            0
        }
        InjectStatus::Event(InjectEvent::ConnectionRefused) => {
            if j.sub_status != 0
                || j.retry_after_ms.is_some()
                || j.forward
                || j.only.is_some()
                || j.region.is_some()
            {
                return Err((
                    "status",
                    "a refused connect sends nothing and knows no request or region: no sub_status, retry_after_ms, forward, only or region".into(),
                ));
            }
            0
        }
    };
    if status != 0 && !INJECTABLE.contains(&status) {
        return Err((
            "status",
            format!(
                "{status} is not a status the relay answers with (one of {}, or connection_error, connection_refused)",
                INJECTABLE.map(|s| s.to_string()).join(", ")
            ),
        ));
    }
    if status == 404 && !matches!(j.sub_status, 0 | 1002) {
        return Err((
            "sub_status",
            "a 404 is plain (0) or 1002 (ReadSessionNotAvailable)".into(),
        ));
    }
    if status == 403 && !matches!(j.sub_status, 0 | 3 | 1008) {
        return Err((
            "sub_status",
            "a 403 is plain (0), 3 (WriteForbidden) or 1008 (DatabaseAccountNotFound)".into(),
        ));
    }
    if j.retry_after_ms.is_some() && status != 429 {
        return Err((
            "retry_after_ms",
            format!(
                "only a 429 carries a retry-after, not a {}",
                j.status.describe()
            ),
        ));
    }
    if j.count == 0 {
        return Err(("count", "at least 1 attempt".into()));
    }
    Ok(())
}

/// Checks what ties steps to the `account` before them: one account per
/// script, its regions; an injection's `region` one of them (and no
/// retry-after or `forward`, which the account's replicas do not carry); a
/// request's `regions` expectation only after the account, naming its
/// regions, one per attempt. `Err((step index, field, message))`.
pub(super) fn validate_account_use(steps: &[Step]) -> Result<(), (usize, String, String)> {
    let mut account: Option<&Account> = None;
    for (i, step) in steps.iter().enumerate() {
        let kind = step.kind();
        let at = |field: &str, message: String| (i, format!("{kind}.{field}"), message);
        match step {
            Step::Account(a) => {
                if account.is_some() {
                    return Err((i, kind.into(), "one account per script".into()));
                }
                validate_account(a).map_err(|(f, m)| at(f, m))?;
                account = Some(a);
            }
            Step::Inject(j) => {
                let Some(a) = account else {
                    if j.region.is_some() {
                        return Err(at(
                            "region",
                            "an injection names a region only after an `account` step".into(),
                        ));
                    }
                    continue;
                };
                if let Some(r) = &j.region {
                    if !a.regions.contains(r) {
                        return Err(at(
                            "region",
                            format!(
                                "`{r}` is not a region of the account ({})",
                                a.regions.join(", ")
                            ),
                        ));
                    }
                }
                if j.retry_after_ms.is_some() {
                    return Err(at(
                        "retry_after_ms",
                        "the account's replicas answer without x-ms-retry-after-ms (the SDK waits 5 s)".into(),
                    ));
                }
                if j.forward {
                    return Err(at(
                        "forward",
                        "after an `account` step injections answer in place of a replica, never after it".into(),
                    ));
                }
            }
            _ => {}
        }
        let Some(e) = step.expect() else { continue };
        let Some(regions) = &e.regions else { continue };
        let Some(a) = account else {
            return Err(at(
                "expect.regions",
                "only a Cosmos request after an `account` step goes through regions".into(),
            ));
        };
        if let Some(r) = regions.iter().find(|r| !a.regions.contains(r)) {
            return Err(at(
                "expect.regions",
                format!(
                    "`{r}` is not a region of the account ({})",
                    a.regions.join(", ")
                ),
            ));
        }
        if let Some(n) = e.attempts {
            if n != regions.len() {
                return Err(at(
                    "expect.regions",
                    format!(
                        "{} region(s) for {n} attempt(s): one per attempt",
                        regions.len()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Checks an `account` step's own fields.
fn validate_account(a: &Account) -> Result<(), (&'static str, String)> {
    if a.regions.is_empty() {
        return Err(("regions", "at least one region".into()));
    }
    for (i, r) in a.regions.iter().enumerate() {
        if r.is_empty() || r.contains(char::is_whitespace) {
            return Err(("regions", format!("`{r}`: a region's name is one word")));
        }
        if a.regions[..i].contains(r) {
            return Err(("regions", format!("`{r}` is named twice")));
        }
    }
    if a.multi_write {
        return Err((
            "multi_write",
            "the model's multi-region client serves single-write accounts only (its writes and strong reads go to the write region's primary)".into(),
        ));
    }
    if let Some(s) = &a.stale_write_region {
        if !a.regions[1..].contains(s) {
            return Err((
                "stale_write_region",
                format!("`{s}`: one of the account's regions after the first (the write region)"),
            ));
        }
    }
    Ok(())
}
