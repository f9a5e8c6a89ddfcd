//! How a failing `queues` run is drawn: every connector call on its node's
//! lane in the service's words (`poll 'FullTraversal||A: repo' limit 3 →
//! 200 d008, d009`, `push d003 MODIFIED → 200 MODIFIED`), the connectors'
//! own reports (traversal phases, checkpoints) and the repository's changes
//! as marks, the server's recoveries as marks on its lane. Crashes, pauses,
//! partitions and clocks come from the world's part of the page; what a
//! violation names is marked from the violation itself.

use super::history::{Call, Outcome, QueueEvent, QueueHistory};
use overcast_harness::report::call_words;
use overcast_model::connector::ConnectorEvent;
use overcast_model::queue::{ItemStatus, PushType, QueueRequest, DEFAULT_QUEUE};
use overcast_sim::timeline::{node_lane, secs, Mark, MarkKind, Timeline, Tone};

/// An item status in SPEC §5's words: `NEW_ITEM`, `MODIFIED`, `ACCEPTED`, `ERROR`.
pub fn status_word(s: ItemStatus) -> &'static str {
    match s {
        ItemStatus::Error => "ERROR",
        ItemStatus::Modified => "MODIFIED",
        ItemStatus::NewItem => "NEW_ITEM",
        ItemStatus::Accepted => "ACCEPTED",
    }
}

/// A push type in SPEC §5's words.
fn push_type_word(t: PushType) -> &'static str {
    match t {
        PushType::Unspecified => "UNSPECIFIED",
        PushType::Modified => "MODIFIED",
        PushType::NotModified => "NOT_MODIFIED",
        PushType::RepositoryError => "REPOSITORY_ERROR",
        PushType::Requeue => "REQUEUE",
    }
}

/// A queue's name as the checks quote it: `'FullTraversal||A: repo'`.
pub fn queue_words(queue: Option<&str>) -> String {
    format!("'{}'", queue.unwrap_or(DEFAULT_QUEUE))
}

/// Names joined for a sentence: `d008, d009`, or `none`.
pub fn names<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let all: Vec<String> = items.into_iter().map(|s| s.as_ref().to_string()).collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}

/// A call in a few words, with what it was answered.
pub fn words(call: &Call, result: Option<&Outcome>) -> (String, Tone) {
    let asked = match &call.request {
        QueueRequest::CreateDatasource { datasource, .. } => {
            format!("create datasource {datasource}")
        }
        QueueRequest::Push { item, .. } => format!(
            "push {} {}{}",
            item.name,
            push_type_word(item.r#type),
            item.queue
                .as_deref()
                .map_or(String::new(), |q| format!(" into {}", queue_words(Some(q))))
        ),
        QueueRequest::Poll { queue, limit, .. } => format!(
            "poll {}{}",
            queue_words(queue.as_deref()),
            limit.map_or(String::new(), |l| format!(" limit {l}"))
        ),
        QueueRequest::Index {
            name,
            version,
            queue,
            ..
        } => format!(
            "index {name} version {}{}",
            crate::kit::words::short_etag(version),
            queue
                .as_deref()
                .map_or(String::new(), |q| format!(" into {}", queue_words(Some(q))))
        ),
        QueueRequest::Delete { name, .. } => format!("delete {name}"),
        QueueRequest::Unreserve { queue, .. } => {
            format!("unreserve {}", queue_words(queue.as_deref()))
        }
        QueueRequest::DeleteQueueItems { queue, .. } => {
            format!("deleteQueueItems {}", queue_words(queue.as_deref()))
        }
        QueueRequest::GetOperation { operation, .. } => format!("get {operation}"),
    };
    let seen = result.map(|r| {
        let mut seen = r.status.to_string();
        if let Some(resp) = &r.response {
            if let Some(e) = &resp.error {
                seen += &format!(" {e}");
            }
            if matches!(call.request, QueueRequest::Poll { .. }) && r.status == 200 {
                seen += &format!(" {}", names(resp.items.iter().map(|i| &i.name)));
            }
            if let Some(s) = resp.item_status {
                seen += &format!(" {}", status_word(s));
            }
            if let Some(op) = &resp.operation {
                seen += &format!(" {}{}", op.name, if op.done { " done" } else { "" });
            }
        }
        (r.status, seen)
    });
    call_words(asked, seen)
}

/// A connector's report in a word or two, and in a sentence.
pub(super) fn report_words(e: &ConnectorEvent) -> (String, String) {
    match e {
        ConnectorEvent::Started {
            incremental, full, ..
        } => (
            "started".into(),
            format!(
                "started, from checkpoint_incremental {incremental}{}",
                full.as_deref()
                    .map_or(String::new(), |f| format!(" and checkpoint_full {f}"))
            ),
        ),
        ConnectorEvent::CheckpointsCorrupt { kept, cut } => (
            "checkpoints corrupt".into(),
            format!(
                "found a damaged record in its checkpoint log: cut {cut} bytes after the {kept} it kept (the checkpoints saved there are lost), and starts the full traversal over"
            ),
        ),
        ConnectorEvent::CheckpointSaved { name, value } => (
            "checkpoint".into(),
            format!("saved {name} = {}", value.replace('\n', " ")),
        ),
        ConnectorEvent::FullPostponed { operation } => (
            "full postponed".into(),
            format!("postponed the full traversal: {operation} is not done"),
        ),
        ConnectorEvent::FullIndexing {
            queue,
            resume_after,
        } => (
            "full: indexing".into(),
            format!(
                "the full traversal began indexing into {}{}",
                queue_words(Some(queue)),
                resume_after
                    .as_deref()
                    .map_or(String::new(), |r| format!(", resuming after {r}"))
            ),
        ),
        ConnectorEvent::FullAborted { why } => (
            "full aborted".into(),
            format!("the full traversal stopped: {why}"),
        ),
        ConnectorEvent::FullDone {
            queue,
            deleted,
            operation,
            done,
        } => (
            "full done".into(),
            format!(
                "the full traversal into {} ended, deleting {}{}{}",
                queue_words(Some(queue)),
                queue_words(Some(deleted)),
                operation
                    .as_deref()
                    .map_or(String::new(), |o| format!(" with {o}")),
                if *done { "" } else { " (not done yet)" }
            ),
        ),
        ConnectorEvent::Final { complete } => (
            "final".into(),
            format!(
                "the final traversals {}",
                if *complete {
                    "completed"
                } else {
                    "did not complete"
                }
            ),
        ),
    }
}

/// Draws the calls on their connectors' lanes and the nodes' events as marks.
pub fn draw(h: &QueueHistory, t: &mut Timeline) {
    t.add_ops(
        &h.ops,
        |o| node_lane(&o.call.node).to_string(),
        |o| words(&o.call, o.result.as_ref()),
    );
    for e in &h.node_events {
        let (label, detail, kind) = match &e.event {
            QueueEvent::Logged { .. } => continue,
            QueueEvent::Recovered { kept } => (
                format!("recovered {kept}"),
                format!("started and recovered the first {kept} records of its log"),
                MarkKind::Event,
            ),
            QueueEvent::CheckpointsLost { records } => (
                "checkpoints lost".into(),
                format!(
                    "its lying disk lost synced checkpoint records at a power failure: {}",
                    records
                        .iter()
                        .map(|(n, v)| format!("{n} = {}", v.replace('\n', " ")))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                MarkKind::Fault,
            ),
            QueueEvent::Refused { reason } => (
                "refused".into(),
                format!("found every copy of its log corrupt and refuses service: {reason}"),
                MarkKind::Fault,
            ),
            QueueEvent::Repo {
                id, rev, content, ..
            } => match content {
                Some(_) => (
                    format!("{id} r{rev}"),
                    format!("the repository has {id} at revision {rev}"),
                    MarkKind::Event,
                ),
                None => (
                    format!("{id} removed"),
                    format!("{id} was removed from the repository"),
                    MarkKind::Event,
                ),
            },
            QueueEvent::Connector(c) => {
                let (label, detail) = report_words(c);
                (label, detail, MarkKind::Event)
            }
        };
        t.marks.push(Mark {
            lane: node_lane(&e.node).to_string(),
            at_ns: e.at_ns,
            label,
            detail: format!("{} at {}: {detail}", e.node, secs(e.at_ns)),
            kind,
            highlight: false,
        });
    }
}
