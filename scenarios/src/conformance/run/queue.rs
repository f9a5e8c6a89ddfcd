//! Indexing-queue steps (SPEC §5): the `QueueRequest` each queue step sends
//! (captured item and operation names resolved, repeats expanded) and the
//! request as a line.

use super::words::{short, status_name};
use super::{lookup, target, State, Target};
use crate::conformance::format::{Captured, QueueHashes, Step, Text};
use crate::conformance::time::parse_duration;
use overcast_model::conditions::Millis;
use overcast_model::queue::{Hashes, PushItem, QueueConfig, QueueRequest};

/// The indexing-queue request of a queue step, and the datasource it addresses.
pub(super) fn request(step: &Step, state: &State) -> Result<(QueueRequest, Target), String> {
    let request = queue_request(step, state)?;
    let resource = format!("queue:{}", request.datasource());
    Ok((request, target(resource)))
}

/// A queue item's name as sent: a captured `$name`'s value, or the text.
fn item_name(t: &Text, state: &State) -> Result<String, String> {
    match t.captured_name() {
        Some(n) => match lookup(state, n)? {
            Captured::Item(id) => Ok(id.clone()),
            _ => Err(format!("{n} holds no item id")),
        },
        None => Ok(t.expand()),
    }
}

fn hashes(h: &Option<QueueHashes>) -> Hashes {
    let text = |t: &Option<Text>| t.as_ref().map(Text::expand);
    h.as_ref().map_or_else(Hashes::default, |h| Hashes {
        metadata: text(&h.metadata),
        structured_data: text(&h.structured_data),
        content: text(&h.content),
    })
}

/// The indexing-queue request of a queue step.
fn queue_request(step: &Step, state: &State) -> Result<QueueRequest, String> {
    let queue = |q: &Option<Text>| q.as_ref().map(Text::expand);
    let duration = |d: &Option<String>, default: Millis| -> Millis {
        // Durations were validated with the script.
        d.as_deref()
            .and_then(|d| parse_duration(d).ok())
            .map_or(default, |ms| ms.max(0) as Millis)
    };
    Ok(match step {
        Step::QueueCreateDatasource(s) => {
            let defaults = QueueConfig::default();
            let takes = duration(&s.delete_takes, defaults.delete_ms.0);
            QueueRequest::CreateDatasource {
                datasource: s.datasource.clone(),
                config: QueueConfig {
                    time_scale: s.time_scale.unwrap_or(defaults.time_scale),
                    backoff_ms: duration(&s.backoff, defaults.backoff_ms),
                    max_backoff_ms: duration(&s.max_backoff, defaults.max_backoff_ms),
                    delete_ms: (takes, takes),
                },
            }
        }
        Step::QueuePush(s) => QueueRequest::Push {
            datasource: s.datasource.clone(),
            item: PushItem {
                name: item_name(&s.item, state)?,
                r#type: s.push_type.unwrap_or_default(),
                hashes: hashes(&s.hashes),
                payload: s.payload.as_ref().map(Text::expand),
                queue: queue(&s.queue),
                repository_error: s.repository_error.clone(),
            },
        },
        Step::QueuePoll(s) => QueueRequest::Poll {
            datasource: s.datasource.clone(),
            queue: queue(&s.queue),
            statuses: s.statuses.clone(),
            limit: s.limit,
        },
        Step::QueueIndex(s) => QueueRequest::Index {
            datasource: s.datasource.clone(),
            name: item_name(&s.item, state)?,
            version: s.version.expand(),
            queue: queue(&s.queue),
            content: s.content.clone().unwrap_or_default(),
            hashes: hashes(&s.hashes),
        },
        Step::QueueDelete(s) => QueueRequest::Delete {
            datasource: s.datasource.clone(),
            name: item_name(&s.item, state)?,
            version: s.version.expand(),
        },
        Step::QueueUnreserve(s) => QueueRequest::Unreserve {
            datasource: s.datasource.clone(),
            queue: queue(&s.queue),
        },
        Step::QueueDeleteQueueItems(s) => QueueRequest::DeleteQueueItems {
            datasource: s.datasource.clone(),
            queue: queue(&s.queue),
        },
        Step::QueueGetOperation(s) => {
            let v = s.operation.trim();
            let operation = if v.starts_with('$') {
                match lookup(state, v)? {
                    Captured::Operation(o) => o.clone(),
                    _ => return Err(format!("{v} holds no operation")),
                }
            } else {
                v.to_string()
            };
            QueueRequest::GetOperation {
                datasource: s.datasource.clone(),
                operation,
            }
        }
        _ => return Err("not a queue step".into()),
    })
}

fn describe_hashes(h: &Hashes) -> String {
    let mut out = String::new();
    for (name, v) in [
        ("metadataHash", &h.metadata),
        ("structuredDataHash", &h.structured_data),
        ("contentHash", &h.content),
    ] {
        if let Some(v) = v {
            out += &format!(", {name} {}", short(v));
        }
    }
    out
}

/// A queue request as a line.
pub(super) fn describe(kind: &str, r: &QueueRequest) -> String {
    let ds = r.datasource();
    let queue = |q: &Option<String>| match q {
        Some(q) => format!(", queue {}", short(q)),
        None => String::new(),
    };
    match r {
        QueueRequest::CreateDatasource { config, .. } => format!(
            "{kind} {ds}, time_scale {}, backoff {}ms..{}ms, deleteQueueItems takes {}ms",
            config.time_scale, config.backoff_ms, config.max_backoff_ms, config.delete_ms.0
        ),
        QueueRequest::Push { item, .. } => {
            let mut out = format!("{kind} {ds}/{} type {:?}", short(&item.name), item.r#type);
            out += &describe_hashes(&item.hashes);
            if let Some(p) = &item.payload {
                out += &format!(", payload {}", short(p));
            }
            out += &queue(&item.queue);
            if let Some(e) = &item.repository_error {
                out += &format!(", repositoryError {e:?}");
            }
            out
        }
        QueueRequest::Poll {
            queue: q,
            statuses,
            limit,
            ..
        } => {
            let mut out = format!("{kind} {ds}{}", queue(q));
            if !statuses.is_empty() {
                let names: Vec<&str> = statuses.iter().map(|s| status_name(*s)).collect();
                out += &format!(", statusCodes [{}]", names.join(", "));
            }
            if let Some(l) = limit {
                out += &format!(", limit {l}");
            }
            out
        }
        QueueRequest::Index {
            name,
            version,
            queue: q,
            content,
            hashes,
            ..
        } => format!(
            "{kind} {ds}/{} version {}{} content {content:?}{}",
            short(name),
            short(version),
            queue(q),
            describe_hashes(hashes)
        ),
        QueueRequest::Delete { name, version, .. } => {
            format!("{kind} {ds}/{} version {}", short(name), short(version))
        }
        QueueRequest::Unreserve { queue: q, .. }
        | QueueRequest::DeleteQueueItems { queue: q, .. } => format!("{kind} {ds}{}", queue(q)),
        QueueRequest::GetOperation { operation, .. } => format!("{kind} {ds} {operation}"),
    }
}
