//! The format's own tests: malformed scripts name their step and field, and
//! parameters, answer fields and captured names go with their operation.

use overcast_scenarios::conformance::format::*;
use overcast_sim::clock::EPOCH_MS;

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
    let get = script(r#"{"get_blob": {"container": "c", "blob": "b", "body": "x", "expect": {}}}"#);
    let e = parse(&get).unwrap_err();
    assert_eq!((e.step, e.field.as_str()), (Some(1), "get_blob.body"));
}

#[test]
fn metadata_goes_with_put_and_set_metadata_and_its_expectation_with_reads() {
    for ok in [
        r#"{"put_blob": {"container": "c", "blob": "b", "body": "x", "metadata": {"k": "v"}, "expect": {}}}"#,
        r#"{"set_blob_metadata": {"container": "c", "blob": "b", "metadata": {"k": "v"}, "expect": {"status": 200, "no_error_code": true}}}"#,
        r#"{"get_blob_properties": {"container": "c", "blob": "b", "expect": {"status": 200, "metadata": {}, "no_body": true}}}"#,
    ] {
        assert!(parse(&script(ok)).is_ok(), "{ok}");
    }
    let refused_at = |steps: &str| {
        let e = parse(&script(steps)).unwrap_err();
        e.field
    };
    assert_eq!(
        refused_at(
            r#"{"get_blob_properties": {"container": "c", "blob": "b", "metadata": {"k": "v"}, "expect": {}}}"#
        ),
        "get_blob_properties.metadata"
    );
    assert_eq!(
        refused_at(
            r#"{"set_blob_metadata": {"container": "c", "blob": "b", "body": "x", "expect": {}}}"#
        ),
        "set_blob_metadata.body"
    );
    assert!(refused_at(
        r#"{"set_blob_metadata": {"container": "c", "blob": "b", "expect": {"metadata": {}}}}"#
    )
    .contains("metadata"));
}

/// The step and field a malformed script `steps` is refused for.
fn refused(steps: &str) -> (Option<usize>, String) {
    let e = parse(&script(steps)).unwrap_err();
    (e.step, e.field)
}

#[test]
fn an_answer_field_the_step_kind_lacks_is_malformed() {
    assert_eq!(
        refused(
            r#"{"put_blob": {"container": "c", "blob": "b", "body": "x", "expect": {"lease_state": "leased"}}}"#
        ),
        (Some(1), "put_blob.expect.lease_state".into())
    );
    assert_eq!(
        refused(
            r#"{"cosmos_read": {"container": "c", "partition_key": "p", "id": "x", "expect": {"capture": {"lease_id": "$l"}}}}"#
        ),
        (Some(1), "cosmos_read.expect.capture.lease_id".into())
    );
    assert_eq!(
        refused(
            r#"{"lease_blob": {"container": "c", "blob": "b", "action": "break", "expect": {"lease_state": "held"}}}"#
        ),
        (Some(1), "lease_blob.expect.lease_state".into())
    );
}

#[test]
fn a_lease_header_the_action_does_not_take_is_malformed() {
    assert_eq!(
        refused(
            r#"{"lease_blob": {"container": "c", "blob": "b", "action": "renew", "duration": 15, "expect": {}}}"#
        ),
        (Some(1), "lease_blob.duration".into())
    );
    assert_eq!(
        refused(
            r#"{"lease_blob": {"container": "c", "blob": "b", "action": "steal", "expect": {}}}"#
        ),
        (Some(1), "lease_blob.action".into())
    );
    assert_eq!(
        refused(
            r#"{"lease_container": {"container": "c", "blob": "b", "action": "break", "expect": {}}}"#
        ),
        (Some(1), "lease_container.blob".into())
    );
    assert_eq!(
        refused(
            r#"{"lease_blob": {"container": "c", "blob": "b", "action": "renew", "lease_id": "$l", "expect": {}}}"#
        ),
        (Some(1), "lease_blob.lease_id".into())
    );
}

#[test]
fn cosmos_and_search_parameters_go_with_their_operation() {
    assert_eq!(
        refused(
            r#"{"cosmos_replace": {"container": "c", "partition_key": "p", "id": "x", "body": "b", "if_none_match": "0x1", "expect": {}}}"#
        ),
        (Some(1), "cosmos_replace.if_none_match".into())
    );
    assert_eq!(
        refused(
            r#"{"cosmos_create": {"container": "c", "partition_key": "p", "id": "x", "expect": {}}}"#
        ),
        (Some(1), "cosmos_create.body".into())
    );
    assert_eq!(
        refused(
            r#"{"search_put": {"index": "i", "synonym_map": "s", "fields": ["id"], "expect": {}}}"#
        ),
        (Some(1), "search_put.index".into())
    );
    assert_eq!(
        refused(
            r#"{"search_put": {"index": "i", "fields": ["id"], "if_match": "*", "only_if_unchanged": true, "expect": {}}}"#
        ),
        (Some(1), "search_put.only_if_unchanged".into())
    );
}

#[test]
fn queue_and_feed_parameters_and_captures_go_with_their_operation() {
    assert_eq!(
        refused(
            r#"{"queue_push": {"datasource": "d", "item": "a", "type": "CHANGED", "expect": {}}}"#
        )
        .1,
        "queue_push.type"
    );
    assert_eq!(
        refused(r#"{"queue_push": {"datasource": "d", "item": "$i", "expect": {}}}"#),
        (Some(1), "queue_push.item".into())
    );
    assert_eq!(
        refused(r#"{"queue_push": {"datasource": "d", "item": "a", "expect": {"items": []}}}"#),
        (Some(1), "queue_push.expect.items".into())
    );
    assert_eq!(
        refused(
            r#"{"queue_poll": {"datasource": "d", "expect": {"items": [{"id": "a", "body": "x"}]}}}"#
        ),
        (Some(1), "queue_poll.expect.items[0].body".into())
    );
    assert_eq!(
        refused(
            r#"{"queue_poll": {"datasource": "d", "expect": {"capture": {"operation": "$o"}}}}"#
        ),
        (Some(1), "queue_poll.expect.capture.operation".into())
    );
    assert_eq!(
        refused(
            r#"{"queue_delete_queue_items": {"datasource": "d", "expect": {"capture": {"operation": "$o"}}}},
               {"feed_read": {"container": "c", "range": 0, "continuation": "$o", "expect": {}}}"#
        ),
        (Some(2), "feed_read.continuation".into())
    );
    assert_eq!(
        refused(
            r#"{"feed_read": {"container": "c", "range": 0, "start": "beginning", "continuation": "7", "expect": {}}}"#
        ),
        (Some(1), "feed_read.start".into())
    );
    assert_eq!(
        refused(
            r#"{"feed_read": {"container": "c", "range": 0, "partition_key": "p", "start": "now", "expect": {}}}"#
        ),
        (Some(1), "feed_read.range".into())
    );
    assert_eq!(
        refused(
            r#"{"feed_read": {"container": "c", "range": 0, "start": "yesterday", "expect": {}}}"#
        ),
        (Some(1), "feed_read.start".into())
    );
    assert_eq!(
        refused(
            r#"{"feed_read": {"container": "c", "range": 0, "start": "now", "expect": {"continuation": "fresh"}}}"#
        ),
        (Some(1), "feed_read.expect.continuation".into())
    );
    let ok = r#"{"feed_ranges": {"container": "c", "expect": {"capture": {"ranges[2]": "$r"}}}},
        {"feed_read": {"container": "c", "range": "$r", "start": "beginning",
          "expect": {"items": ["a", {"id": "b", "version": 2}], "capture": {"continuation": "$c", "items[1]": "$i"}}}},
        {"feed_read": {"container": "c", "range": "$r", "continuation": "$c", "expect": {"continuation": "same as $c"}}},
        {"queue_push": {"datasource": "d", "item": "$i", "queue": {"repeat": "q", "times": 3}, "expect": {}}}"#;
    assert!(parse(&script(ok)).is_ok(), "{:?}", parse(&script(ok)).err());
}

#[test]
fn a_name_captured_by_a_batch_result_is_usable_only_from_the_next_step() {
    let same_step = r#"{"cosmos_batch": {"container": "c", "partition_key": "p",
        "ops": [{"create": {"id": "a", "body": "1"}}, {"read": {"id": "a"}}],
        "expect": {"results": [{"capture": {"etag": "$a"}}, {"etag": "same as $a"}]}}}"#;
    assert_eq!(
        refused(same_step),
        (Some(1), "cosmos_batch.expect.results[1].etag".into())
    );
    let next_step = r#"{"cosmos_batch": {"container": "c", "partition_key": "p",
        "ops": [{"create": {"id": "a", "body": "1"}}],
        "expect": {"results": [{"capture": {"etag": "$a"}}]}}},
        {"cosmos_read": {"container": "c", "partition_key": "p", "id": "a", "if_none_match": "$a",
        "expect": {"etag": "same as $a"}}}"#;
    assert!(parse(&script(next_step)).is_ok());
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

#[test]
fn an_inject_step_and_waits_are_checked_in_the_scripts_words() {
    let read = r#"{"cosmos_read": {"container": "c", "partition_key": "p", "id": "x", "expect": {"status": 200}}}"#;
    let ok = script(&format!(
        r#"{{"inject": {{"status": 429, "retry_after_ms": 100, "count": 2, "only": "reads"}}}}, {read}"#
    ));
    parse(&ok).expect("a well-formed inject");
    let forwarded = script(&format!(
        r#"{{"inject": {{"status": 408, "only": "writes", "forward": true}}}}, {read}"#
    ));
    parse(&forwarded).expect("a forwarded inject");
    for (inject, field, says) in [
        (
            r#"{"status": 200}"#,
            "inject.status",
            "not a status the relay answers with",
        ),
        (
            r#"{"status": 404, "sub_status": 7}"#,
            "inject.sub_status",
            "1002 (ReadSessionNotAvailable)",
        ),
        (
            r#"{"status": 403, "sub_status": 7}"#,
            "inject.sub_status",
            "1008 (DatabaseAccountNotFound)",
        ),
        (
            r#"{"status": "connection_error", "forward": true}"#,
            "inject.status",
            "a connection error has no answer",
        ),
        (
            r#"{"status": "timeout"}"#,
            "inject.status",
            "did not match any variant",
        ),
        (
            r#"{"status": 404, "region": "west"}"#,
            "inject.region",
            "only after an `account` step",
        ),
        (
            r#"{"status": 449, "retry_after_ms": 5}"#,
            "inject.retry_after_ms",
            "only a 429",
        ),
        (
            r#"{"status": 410, "count": 0}"#,
            "inject.count",
            "at least 1",
        ),
        (
            r#"{"status": 410, "only": "deletes"}"#,
            "inject.only",
            "unknown variant",
        ),
    ] {
        let e = parse(&script(&format!(r#"{{"inject": {inject}}}, {read}"#))).unwrap_err();
        assert_eq!(
            (e.step, e.field.as_str()),
            (Some(1), field),
            "{inject}: {e}"
        );
        assert!(e.message.contains(says), "{inject}: {e}");
    }
    let with_waits = |expect: &str| {
        script(&format!(
            r#"{{"cosmos_read": {{"container": "c", "partition_key": "p", "id": "x", "expect": {expect}}}}}"#
        ))
    };
    parse(&with_waits(r#"{"attempts": 3, "waits": ["0..1", "1000"]}"#)).expect("waits");
    for (expect, field, says) in [
        (
            r#"{"waits": ["5 ms"]}"#,
            "cosmos_read.expect.waits[0]",
            "expected ms",
        ),
        (
            r#"{"waits": ["1", "9..3"]}"#,
            "cosmos_read.expect.waits[1]",
            "empty",
        ),
        (
            r#"{"attempts": 2, "waits": []}"#,
            "cosmos_read.expect.waits",
            "0 wait(s) for 2 attempt(s)",
        ),
    ] {
        let e = parse(&with_waits(expect)).unwrap_err();
        assert_eq!(
            (e.step, e.field.as_str()),
            (Some(1), field),
            "{expect}: {e}"
        );
        assert!(e.message.contains(says), "{expect}: {e}");
    }
}
