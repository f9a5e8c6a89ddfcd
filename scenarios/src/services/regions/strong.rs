//! Linearizability of the strong operations of `regions`, per item: every
//! write (writes always go to the primary) and every strong read, against a
//! register of the item's body (absent = deleted). Conditions are judged
//! from the outside: a replace's If-Match ETag stands for the body that the
//! history shows with that ETag (from any answer), so the check needs no
//! model counter; an ETag the history never showed with a body is not
//! judged (any present body matches it). Calls refused without being
//! executed (403/3, 404/1002, 410, 503, an SDK give-up) are left out; a write
//! with no answer may have taken effect at any point after it was sent, or
//! never.

use super::history::{Consistency, RegionCall, RegionOutcome, RegionsHistory};
use super::Service;
use overcast_sim::check::{Checked, Checker};
use overcast_sim::lin::{self, Next, Operation, Spec};
use std::collections::BTreeMap;

/// One operation as the register spec sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegisterOp {
    /// A strong read.
    Read,
    /// A blind write of a body (upsert).
    Upsert(String),
    /// Create a body if absent.
    Create(String),
    /// Replace with a body if the current body is `expected` (`None`: an
    /// ETag never seen with a body: any present body).
    Replace {
        /// The new body.
        body: String,
        /// The body behind the If-Match ETag.
        expected: Option<String>,
    },
    /// Delete, if the current body is `expected` (`Some(None)`: no If-Match).
    Delete {
        /// The body behind the If-Match ETag; `None` for an unconditional delete
        /// or an ETag never seen with a body.
        expected: Option<String>,
        /// Whether an If-Match was sent.
        conditional: bool,
    },
}

/// What was answered: the status and, for reads, the body seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterOut {
    /// The status.
    pub status: u16,
    /// The body a read saw.
    pub body: Option<String>,
}

/// The register of one item's body, judged in its service's dialect.
pub struct Register {
    /// Which statuses the service answers (SPEC §1.3 for items, §1.1 for blobs).
    pub service: Service,
}

impl Spec for Register {
    type State = Option<String>;
    type Input = RegisterOp;
    type Output = RegisterOut;

    fn init(&self, _key: &str) -> Option<String> {
        None
    }

    fn step(
        &self,
        s: &Option<String>,
        op: &RegisterOp,
        out: Option<&RegisterOut>,
    ) -> Next<Option<String>> {
        let matches = |expected: &Option<String>| match (s, expected) {
            (Some(cur), Some(e)) => cur == e,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let blob = self.service == Service::Blob;
        // A replace: Put Blob answers 201 Created, Cosmos 200.
        let replaced = if blob { 201 } else { 200 };
        // An If-Match that does not hold: a present item whose body is not
        // the one behind the ETag (an ETag never seen with a body is given
        // the benefit of the doubt), or, for a blob, no item at all (§1.1.3:
        // 412; Cosmos answers a missing item 404).
        let refused = |expected: &Option<String>| match s {
            Some(_) => expected.is_none() || !matches(expected),
            None => blob,
        };
        let status = out.map(|o| o.status);
        match op {
            RegisterOp::Read => match out {
                None => Next::One(s.clone()),
                Some(o) if o.status == 404 && s.is_none() => Next::One(None),
                Some(o) if o.status == 200 && o.body.is_some() && o.body == *s => {
                    Next::One(s.clone())
                }
                Some(_) => Next::Illegal,
            },
            RegisterOp::Upsert(b) => match status {
                None => Next::One(Some(b.clone())),
                // A blob put answers 201 whether it created or replaced,
                // never 200.
                Some(201) => Next::One(Some(b.clone())),
                Some(200) if !blob => Next::One(Some(b.clone())),
                Some(_) => Next::Illegal,
            },
            RegisterOp::Create(b) => match status {
                None if s.is_none() => Next::One(Some(b.clone())),
                None => Next::One(s.clone()),
                Some(201) if s.is_none() => Next::One(Some(b.clone())),
                Some(409) if s.is_some() => Next::One(s.clone()),
                Some(_) => Next::Illegal,
            },
            RegisterOp::Replace { body, expected } => match status {
                None if matches(expected) => Next::Many(vec![Some(body.clone()), s.clone()]),
                None => Next::One(s.clone()),
                Some(st) if st == replaced && matches(expected) => Next::One(Some(body.clone())),
                Some(412) if refused(expected) => Next::One(s.clone()),
                Some(404) if !blob && s.is_none() => Next::One(None),
                Some(_) => Next::Illegal,
            },
            RegisterOp::Delete {
                expected,
                conditional,
            } => {
                let holds = s.is_some() && (!conditional || matches(expected));
                let deleted = if blob { 202 } else { 204 };
                match status {
                    None if holds => Next::Many(vec![None, s.clone()]),
                    None => Next::One(s.clone()),
                    Some(st) if st == deleted && holds => Next::One(None),
                    Some(412) if *conditional && refused(expected) => Next::One(s.clone()),
                    Some(404) if s.is_none() && (!blob || !conditional) => Next::One(None),
                    Some(_) => Next::Illegal,
                }
            }
        }
    }

    fn is_read_only(&self, op: &RegisterOp, out: Option<&RegisterOut>) -> bool {
        match op {
            RegisterOp::Read => true,
            _ => out.is_some_and(|o| matches!(o.status, 404 | 409 | 412)),
        }
    }

    fn describe_op(&self, op: &RegisterOp, out: Option<&RegisterOut>) -> String {
        let behind = |e: &Option<String>| match e {
            Some(b) => format!(" If-Match (the ETag of \"{b}\")"),
            None => " If-Match (an ETag never seen with a body)".to_string(),
        };
        let asked = match op {
            RegisterOp::Read => "read".to_string(),
            RegisterOp::Upsert(b) => format!("upsert \"{b}\""),
            RegisterOp::Create(b) => format!("create \"{b}\""),
            RegisterOp::Replace { body, expected } => {
                format!("replace \"{body}\"{}", behind(expected))
            }
            RegisterOp::Delete {
                expected,
                conditional,
            } => {
                if *conditional {
                    format!("delete{}", behind(expected))
                } else {
                    "delete".to_string()
                }
            }
        };
        let seen = match out {
            None => "unknown outcome".to_string(),
            Some(RegisterOut {
                status,
                body: Some(b),
            }) => format!("{status} \"{b}\""),
            Some(RegisterOut { status, body: None }) => status.to_string(),
        };
        format!("{asked} → {seen}")
    }

    fn describe_state(&self, s: &Option<String>) -> String {
        match s {
            Some(b) => format!("\"{b}\""),
            None => "absent".to_string(),
        }
    }
}

/// True for an answer the service executed (a read's 200/404, a write's
/// 200/201/204/404/409/412), false for one refused before execution.
fn executed(o: &RegionOutcome) -> bool {
    match o {
        RegionOutcome::Ok { .. } => true,
        RegionOutcome::Failed {
            status, sub_status, ..
        } => matches!(status, 409 | 412) || (*status == 404 && *sub_status == 0),
    }
}

/// The body behind each ETag, from every answer that showed both.
fn bodies_by_etag(h: &RegionsHistory) -> BTreeMap<(String, String), String> {
    let mut m = BTreeMap::new();
    for op in &h.ops {
        if let Some(RegionOutcome::Ok {
            etag: Some(e),
            body,
            ..
        }) = &op.result
        {
            // A blob put's answer carries no body: the acknowledged ETag
            // stands for the body the call wrote.
            let written = op.call.body.as_ref().filter(|_| op.call.is_write());
            if let Some(b) = body.as_ref().or(written) {
                m.entry((op.call.item.clone(), e.clone()))
                    .or_insert_with(|| b.clone());
            }
        }
    }
    m
}

fn register_op(call: &RegionCall, etags: &BTreeMap<(String, String), String>) -> RegisterOp {
    let expected = call
        .if_match
        .as_ref()
        .and_then(|e| etags.get(&(call.item.clone(), e.clone())).cloned());
    let body = call.body.clone().unwrap_or_default();
    match call.op.as_str() {
        "read" => RegisterOp::Read,
        "replace" => RegisterOp::Replace { body, expected },
        "create" => RegisterOp::Create(body),
        "delete" => RegisterOp::Delete {
            expected,
            conditional: call.if_match.is_some(),
        },
        _ => RegisterOp::Upsert(body),
    }
}

/// The strong operations of a history, as the lin checker's operations.
pub fn strong_ops(h: &RegionsHistory) -> Vec<Operation<RegisterOp, RegisterOut>> {
    let etags = bodies_by_etag(h);
    h.ops
        .iter()
        .filter(|op| op.call.is_write() || op.call.consistency == Consistency::Strong)
        .filter(|op| op.result.as_ref().is_none_or(executed))
        .map(|op| Operation {
            id: op.id,
            client: op.client as u64,
            key: op.key.clone(),
            input: register_op(&op.call, &etags),
            invoke: op.invoke_ns as i64,
            ret: op.return_ns.map(|t| t as i64),
            output: op.result.as_ref().map(|r| RegisterOut {
                status: r.status(),
                body: r.body().map(str::to_string).filter(|_| !op.call.is_write()),
            }),
        })
        .collect()
}

/// The checker.
pub struct StrongLinearizability {
    /// The service whose statuses the register expects.
    pub service: Service,
    /// Search budget and report settings.
    pub options: lin::Options,
}

impl Checker<RegionsHistory> for StrongLinearizability {
    fn properties(&self) -> &'static [overcast_sim::check::Property] {
        &[crate::kit::properties::LINEARIZABILITY]
    }

    fn check(&self, h: &RegionsHistory) -> Checked {
        let ops = strong_ops(h);
        let reads = ops.iter().filter(|o| o.input == RegisterOp::Read).count();
        let register = Register {
            service: self.service,
        };
        let report = lin::check(&register, &ops, &self.options);
        crate::kit::words::lin_checked(
            &report,
            "overcast regions (strong operations)",
            &crate::kit::words::same_op,
        )
        .with_note(format!(
            "{} items, {} writes, {reads} strong reads",
            report.keys,
            ops.len() - reads
        ))
    }
}
