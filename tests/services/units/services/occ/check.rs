//! Tests of the occ checkers: the ETag reference, the linearizability mapping and lost writes.
use overcast_model::partition::Effect;
use overcast_model::store;
use overcast_scenarios::services::occ::check::*;
use overcast_scenarios::services::occ::history::{Call, Outcome};
use overcast_sim::check::{Checker, Verdict};
use overcast_sim::history::History;
use overcast_sim::lin::{self};
use overcast_sim::world::WorldOutcome;

#[test]
fn unquoted_removes_the_quotes_trim_matches_removes() {
    for e in [
        "",
        "\"",
        "\"\"",
        "abc",
        "\"0x1\"",
        "\"\"0x1\"",
        "0x1\"",
        "\"é\"",
        "a\"b",
    ] {
        assert_eq!(unquoted(e), e.trim_matches('"'), "{e:?}");
    }
}

/// Replaces every version number the model sent by a wrong one.
fn scramble_versions(h: &mut OccHistory) {
    for o in &mut h.ops {
        if let Some(Outcome::Response {
            version: Some(v), ..
        }) = &mut o.result
        {
            *v = (*v * 7 + 3) % 5;
        }
    }
}

fn verdict(h: &OccHistory) -> lin::Verdict {
    let opts = lin::Options {
        parallel: false,
        ..lin::Options::default()
    };
    check_items(h, &opts).verdict
}

#[test]
fn no_verdict_depends_on_the_version_numbers_the_model_sends() {
    let mut s = overcast_scenarios::CATALOGUE.scenario("occ", 3).unwrap();
    s.params["ops_per_client"] = 40.into();
    let mut good: OccHistory =
        serde_json::from_str(&overcast_scenarios::CATALOGUE.run(&s).history.to_json()).unwrap();
    assert_eq!(verdict(&good), lin::Verdict::Linearizable);
    scramble_versions(&mut good);
    assert_eq!(verdict(&good), lin::Verdict::Linearizable);
    s.bugs = vec!["skip_if_match".into()];
    let mut bad: OccHistory =
        serde_json::from_str(&overcast_scenarios::CATALOGUE.run(&s).history.to_json()).unwrap();
    assert_eq!(verdict(&bad), lin::Verdict::NotLinearizable);
    scramble_versions(&mut bad);
    assert_eq!(verdict(&bad), lin::Verdict::NotLinearizable);
}

mod lost_tests {
    use super::*;
    use overcast_model::conditions::ETag;
    use overcast_model::store::{Item, ItemKey};
    use overcast_model::wal::{encode, LogRecord};
    use overcast_sim::disk::LostWrite;
    use overcast_sim::history::OpRecord;

    fn op(id: u64, key: &str, put: Option<&str>, result: Outcome) -> OpRecord<Call, Outcome> {
        OpRecord {
            id,
            client: id as usize,
            key: key.into(),
            call: Call {
                op: if put.is_some() { "put" } else { "read" }.into(),
                item: key.into(),
                body: put.map(str::to_string),
                if_match: None,
                if_none_match: None,
                if_modified_since: None,
                if_unmodified_since: None,
                operation: None,
                cancel_after_ms: None,
            },
            invoke_ns: id * 10,
            return_ns: Some(id * 10 + 5),
            result: Some(result),
            attempts: vec![],
        }
    }

    fn ok(status: u16, version: u64, body: Option<&str>) -> Outcome {
        Outcome::Response {
            status,
            etag: Some(ETag::from_version(version).0),
            version: Some(version),
            body: body.map(str::to_string),
            last_modified: Some(0),
        }
    }

    /// k1 is written (acknowledged), then a read after a restart sees it
    /// absent: a violation, unless a lying disk is known to have lost it.
    fn history_losing(key: &str) -> OccHistory {
        History {
            version: overcast_sim::history::HISTORY_VERSION,
            ops: vec![
                op(1, key, Some("a"), ok(201, 1, None)),
                op(
                    2,
                    key,
                    None,
                    Outcome::Response {
                        status: 404,
                        etag: None,
                        version: None,
                        body: None,
                        last_modified: None,
                    },
                ),
                op(3, "k2", Some("b"), ok(201, 1, None)),
                op(4, "k2", None, ok(200, 1, Some("b"))),
            ],
            events: vec![],
            node_events: vec![],
            log_events: Vec::new(),
        }
    }

    fn lin() -> Linearizability {
        Linearizability {
            options: lin::Options::default(),
            title: "t".into(),
        }
    }

    #[test]
    fn a_loss_named_by_the_lying_disk_is_reported_and_any_other_is_a_violation() {
        let record = LogRecord {
            partition: 0,
            lsn: 1,
            effect: Effect::Store(store::Effect::ItemWritten {
                key: ItemKey::new("docs", "k1", "k1"),
                item: Item {
                    body: "a".into(),
                    etag: ETag::from_version(1),
                    last_modified: 0,
                    version: 1,
                    metadata: Default::default(),
                },
            }),
        };
        let world = WorldOutcome {
            lost_writes: vec![(
                "server-0".into(),
                LostWrite {
                    offset: 0,
                    bytes: encode(1, &record),
                },
            )],
            ..WorldOutcome::default()
        };
        let events = lost_item_events(&world);
        assert_eq!(events.len(), 1);
        assert!(
            events[0].what.to_string().ends_with("k1 on server-0"),
            "{}",
            events[0].what
        );

        let mut h = history_losing("k1");
        assert!(matches!(lin().check(&h).verdict(), Verdict::Broken { .. }));
        h.events = events.clone();
        let checked = lin().check(&h);
        assert_eq!(checked.verdict(), &Verdict::Held);
        assert!(checked.note.contains("not checked: k1"), "{}", checked.note);

        // A loss of another item is still a violation.
        let mut h = history_losing("k3");
        h.events = events;
        assert!(matches!(lin().check(&h).verdict(), Verdict::Broken { .. }));
    }
}

mod metadata_tests {
    use super::*;
    use overcast_model::conditions::ETag;
    use overcast_model::store::{Conditions, ItemKey, Metadata, StoreRequest};
    use overcast_sim::history::OpRecord;

    fn key() -> ItemKey {
        ItemKey::new("docs", "k1", "k1")
    }

    fn op(
        id: u64,
        request: StoreRequest,
        status: u16,
        version: Option<u64>,
    ) -> OpRecord<Call, Outcome> {
        OpRecord {
            id,
            client: id as usize,
            key: "k1".into(),
            call: Call::from_request(&request),
            invoke_ns: id * 10,
            return_ns: Some(id * 10 + 5),
            result: Some(Outcome::Response {
                status,
                etag: version.map(|v| ETag::from_version(v).0),
                version,
                body: None,
                last_modified: version.map(|_| 0),
            }),
            attempts: vec![],
        }
    }

    fn history(ops: Vec<OpRecord<Call, Outcome>>) -> OccHistory {
        History {
            version: overcast_sim::history::HISTORY_VERSION,
            ops,
            events: vec![],
            node_events: vec![],
            log_events: Vec::new(),
        }
    }

    fn put() -> StoreRequest {
        StoreRequest::Put {
            key: key(),
            body: "a".into(),
            conditions: Conditions::none(),
            metadata: Metadata::new(),
        }
    }

    fn set_metadata(conditions: Conditions) -> StoreRequest {
        StoreRequest::SetMetadata {
            key: key(),
            metadata: Metadata::from([("writer".to_string(), "c1".to_string())]),
            conditions,
        }
    }

    #[test]
    fn a_set_metadata_answering_the_etag_it_found_breaks_e1_and_a_fresh_one_holds() {
        let fresh = history(vec![
            op(1, put(), 201, Some(1)),
            op(
                2,
                set_metadata(Conditions::if_match(ETag::from_version(1))),
                200,
                Some(2),
            ),
        ]);
        assert_eq!(EtagFreshness.check(&fresh).verdict(), &Verdict::Held);
        let kept = history(vec![
            op(1, put(), 201, Some(1)),
            op(
                2,
                set_metadata(Conditions::if_match(ETag::from_version(1))),
                200,
                Some(1),
            ),
        ]);
        assert!(matches!(
            EtagFreshness.check(&kept).verdict(),
            Verdict::Broken { .. }
        ));
    }

    #[test]
    fn head_and_set_metadata_reach_the_spec_as_their_own_operations() {
        let h = history(vec![
            op(1, put(), 201, Some(1)),
            op(
                2,
                set_metadata(Conditions::if_match(ETag::from_version(1))),
                200,
                Some(2),
            ),
            op(
                3,
                StoreRequest::GetProperties {
                    key: key(),
                    conditions: Conditions::if_match(ETag::from_version(1)),
                },
                412,
                None,
            ),
        ]);
        let (ops, _) = to_lin_ops(&h);
        assert!(matches!(
            ops[1].input,
            overcast_scenarios::services::occ::spec::ItemOp::SetMetadata { .. }
        ));
        assert!(matches!(
            ops[2].input,
            overcast_scenarios::services::occ::spec::ItemOp::Head(_)
        ));
        assert_eq!(verdict(&h), lin::Verdict::Linearizable);
        // The HEAD's stale If-Match answered 200 (`head_ignores_if_match`).
        let mut bad = h.clone();
        bad.ops[2] = op(
            3,
            StoreRequest::GetProperties {
                key: key(),
                conditions: Conditions::if_match(ETag::from_version(1)),
            },
            200,
            Some(2),
        );
        assert_eq!(verdict(&bad), lin::Verdict::NotLinearizable);
        assert!(h.ops[1].call.is_write() && !h.ops[2].call.is_write());
    }

    #[test]
    fn r1_holds_a_set_metadata_to_a_write_s_rules_and_a_head_to_a_read_s() {
        use overcast_sim::history::{Attempt, AttemptResult};
        let resent = |request: StoreRequest| {
            let mut o = op(1, request, 200, Some(2));
            o.return_ns = Some(7_000_000_000);
            o.attempts = vec![
                Attempt {
                    sent_ns: 0,
                    waited_ns: 0,
                    result: AttemptResult::Timeout,
                },
                Attempt {
                    sent_ns: 6_000_000_000,
                    waited_ns: 0,
                    result: AttemptResult::Status {
                        status: 200,
                        retry_after_ms: None,
                    },
                },
            ];
            history(vec![o])
        };
        let check = |h: &OccHistory| {
            RetryDiscipline {
                retry: overcast_model::retry::RetryOptions::default(),
                clients: 8,
            }
            .check(h)
        };
        let metadata = check(&resent(set_metadata(Conditions::none())));
        match metadata.verdict() {
            Verdict::Broken { violations } => assert_eq!(violations[0].property, "R1"),
            other => panic!("a Set Blob Metadata re-sent after a timeout: {other:?}"),
        }
        let head = check(&resent(StoreRequest::GetProperties {
            key: key(),
            conditions: Conditions::none(),
        }));
        assert_eq!(head.verdict(), &Verdict::Held);
    }
}
