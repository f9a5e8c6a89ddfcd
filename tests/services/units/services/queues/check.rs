//! Tests of the queue checkers.
use overcast_model::connector::{ConnectorEvent, Source, CHECKPOINT_INCREMENTAL};
use overcast_model::queue::PushItem;
use overcast_model::queue::QueueRequest;
use overcast_scenarios::services::queues::check::connector::incremental_saves;
use overcast_scenarios::services::queues::history::{Call, Outcome, QueueEvent, QueueHistory};
use overcast_sim::history::OpRecord;
use overcast_sim::history::{History, NodeEvent, HISTORY_VERSION};

const MS: u64 = 1_000_000;

fn event(node: &str, at_ms: u64, event: QueueEvent) -> NodeEvent<QueueEvent> {
    NodeEvent {
        node: node.into(),
        at_ns: at_ms * MS,
        local_ms: at_ms,
        event,
    }
}

fn push(id: u64, name: &str, at_ms: u64, status: u16) -> OpRecord<Call, Outcome> {
    OpRecord {
        id,
        client: 1,
        key: name.into(),
        call: Call {
            node: "connector-0".into(),
            source: Source::Incremental,
            request: QueueRequest::Push {
                datasource: "ds".into(),
                item: PushItem {
                    name: name.into(),
                    ..PushItem::default()
                },
            },
        },
        invoke_ns: at_ms * MS,
        return_ns: Some((at_ms + 1) * MS),
        result: Some(Outcome {
            status,
            response: None,
        }),
        attempts: Vec::new(),
    }
}

/// An incremental checkpoint saved after the pushes of the changes it
/// covers holds; saved before one of them (or after a failed one), Q9.
#[test]
fn an_incremental_checkpoint_is_saved_only_after_its_changes_are_pushed() {
    let repo = |at_ms, id: &str, seq| {
        event(
            "editor",
            at_ms,
            QueueEvent::Repo {
                id: id.into(),
                rev: 1,
                content: Some("x".into()),
                seq,
            },
        )
    };
    let saved = |at_ms, value: &str| {
        event(
            "connector-0",
            at_ms,
            QueueEvent::Connector(ConnectorEvent::CheckpointSaved {
                name: CHECKPOINT_INCREMENTAL.into(),
                value: value.into(),
            }),
        )
    };
    let history = |ops, save_ms| History {
        version: HISTORY_VERSION,
        ops,
        events: Vec::new(),
        node_events: vec![
            repo(10, "d000", 1),
            repo(20, "d001", 2),
            saved(save_ms, "2"),
        ],
        log_events: Vec::new(),
    };
    let judge = |h: &QueueHistory| incremental_saves(h).1.len();
    // d001's push (d000's is at 30 ms, 200): when, its status, violations.
    for (at_ms, status, want) in [
        (32, 200, 0),
        // Saved before d001's push.
        (42, 200, 1),
        // d001's push failed (a 503 after retries): the save must wait.
        (32, 503, 1),
        // A push made before the change does not count for it.
        (15, 200, 1),
    ] {
        let ops = vec![push(0, "d000", 30, 200), push(1, "d001", at_ms, status)];
        assert_eq!(judge(&history(ops, 40)), want, "{at_ms} {status}");
    }
}

/// Q9's resume after a loss of checkpoint records: a resume from the start
/// after `checkpoint_full = d003` breaks it, unless a lying disk lost the
/// record of d003 (the log then held no checkpoint: from the start is what
/// the connector could know); the loss of another record explains nothing.
#[test]
fn a_resume_is_judged_against_what_a_lying_disk_left() {
    use overcast_model::connector::CHECKPOINT_FULL;
    use overcast_scenarios::services::queues::check::connector::CheckpointResume;
    use overcast_sim::check::Checker;
    let indexing = |at_ms, resume_after: Option<&str>| {
        event(
            "connector-0",
            at_ms,
            QueueEvent::Connector(ConnectorEvent::FullIndexing {
                queue: "A".into(),
                resume_after: resume_after.map(str::to_string),
            }),
        )
    };
    let saved = event(
        "connector-0",
        20,
        QueueEvent::Connector(ConnectorEvent::CheckpointSaved {
            name: CHECKPOINT_FULL.into(),
            value: "d003".into(),
        }),
    );
    let lost = |value: &str| {
        event(
            "connector-0",
            90,
            QueueEvent::CheckpointsLost {
                records: vec![(CHECKPOINT_FULL.to_string(), value.to_string())],
            },
        )
    };
    let broken = |mut node_events: Vec<NodeEvent<QueueEvent>>| {
        node_events.sort_by_key(|e| e.at_ns);
        let h: QueueHistory = History {
            version: HISTORY_VERSION,
            ops: Vec::new(),
            events: Vec::new(),
            node_events,
            log_events: Vec::new(),
        };
        let checked = CheckpointResume.check(&h);
        (checked.verdict().violations().len(), checked.note)
    };
    let from_start = indexing(50, None);
    assert_eq!(
        broken(vec![indexing(10, None), saved.clone(), from_start.clone()]).0,
        1
    );
    let (n, note) = broken(vec![
        indexing(10, None),
        saved.clone(),
        from_start.clone(),
        lost("d003"),
    ]);
    assert_eq!(n, 0);
    assert!(
        note.contains("1 resumes judged against the checkpoints a lying disk's loss left"),
        "{note}"
    );
    assert_eq!(
        broken(vec![
            indexing(10, None),
            saved.clone(),
            from_start,
            lost("d002")
        ])
        .0,
        1
    );
    // Resuming after a checkpoint never saved is a skip, lost records or not.
    assert_eq!(
        broken(vec![
            indexing(10, None),
            saved,
            indexing(50, Some("d007")),
            lost("d003")
        ])
        .0,
        1
    );
}
