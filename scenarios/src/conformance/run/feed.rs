//! Change feed steps (SPEC §3): the `FeedRequest` of `feed_ranges`,
//! `feed_read` (its scope, its start, its page-size hint) and `feed_split`,
//! and the request as a line.

use super::{date, lookup, target, State, Target};
use crate::conformance::format::{Captured, FeedRead, RangeRef, Step};
use crate::conformance::time::format_rfc1123;
use overcast_model::feed::{FeedRequest, FeedScope, StartFrom};

/// The change feed request of a feed step, and the container it addresses.
pub(super) fn request(step: &Step, state: &State) -> Result<(FeedRequest, Target), String> {
    Ok(match step {
        Step::FeedRanges(s) => (
            FeedRequest::Ranges {
                container: s.container.clone(),
            },
            target(format!("feed:{}", s.container)),
        ),
        Step::FeedRead(s) => (
            feed_read(s, state)?,
            target(format!("feed:{}", s.container)),
        ),
        Step::FeedSplit(s) => (
            FeedRequest::Split {
                container: s.container.clone(),
                range: range_id(&s.range, state)?,
            },
            target(format!("feed:{}", s.container)),
        ),
        _ => return Err("not a feed step".into()),
    })
}

/// A range as sent: its id, or a captured `$name`'s.
fn range_id(r: &RangeRef, state: &State) -> Result<u32, String> {
    match r {
        RangeRef::Id(id) => Ok(*id),
        RangeRef::Captured(n) => match lookup(state, n)? {
            Captured::Range(id) => Ok(*id),
            _ => Err(format!("{n} holds no range")),
        },
    }
}

/// A `feed_read`'s request: its scope, its start, its page-size hint.
fn feed_read(s: &FeedRead, state: &State) -> Result<FeedRequest, String> {
    let scope = match (&s.range, &s.partition_key) {
        (Some(r), _) => FeedScope::Range(range_id(r, state)?),
        (None, Some(pk)) => FeedScope::PartitionKey(pk.clone()),
        (None, None) => return Err("no scope".into()),
    };
    let from = if let Some(c) = &s.continuation {
        let c = c.trim();
        if c.starts_with('$') {
            match lookup(state, c)? {
                Captured::Continuation(t) => StartFrom::Continuation(*t),
                _ => return Err(format!("{c} holds no continuation")),
            }
        } else {
            StartFrom::Continuation(c.parse().map_err(|_| format!("`{c}` is no token"))?)
        }
    } else if let Some(t) = &s.start_time {
        StartFrom::Time(date(t, state)?)
    } else {
        match s.start.as_deref() {
            Some("now") => StartFrom::Now,
            _ => StartFrom::Beginning,
        }
    };
    Ok(FeedRequest::Read {
        container: s.container.clone(),
        scope,
        from,
        page_size: s.page_size.unwrap_or(0),
    })
}

/// A change feed request as a line.
pub(super) fn describe(kind: &str, r: &FeedRequest) -> String {
    match r {
        FeedRequest::Ranges { container } => format!("{kind} {container}"),
        FeedRequest::Split { container, range } => format!("{kind} {container} range {range}"),
        FeedRequest::PurgeExpired { container, ttl_s } => {
            format!("{kind} {container} ttl {ttl_s}s")
        }
        FeedRequest::Read {
            container,
            scope,
            from,
            page_size,
        } => {
            let scope = match scope {
                FeedScope::Range(id) => format!("range {id}"),
                FeedScope::PartitionKey(pk) => format!("partition key {pk:?}"),
            };
            let from = match from {
                StartFrom::Beginning => "from the beginning".to_string(),
                StartFrom::Now => "from now".to_string(),
                StartFrom::Time(t) => format!("from {}", format_rfc1123(*t)),
                StartFrom::Continuation(c) => format!("continuation {c}"),
            };
            let page = if *page_size > 0 {
                format!(", page size {page_size}")
            } else {
                String::new()
            };
            format!("{kind} {container} {scope} {from}{page}")
        }
    }
}
