//! Tests of `overcast_scenarios::services::regions::history`.

/// Builders of hand-written histories for the checkers' tests.
pub(crate) mod build {
    use overcast_scenarios::services::regions::history::*;

    /// A history under construction; ops get ids in the order they are added
    /// (add them in invocation order).
    pub(crate) struct Builder {
        pub(crate) h: RegionsHistory,
    }

    fn ok(status: u16, etag: Option<&str>, body: Option<&str>) -> RegionOutcome {
        RegionOutcome::Ok {
            status,
            etag: etag.map(str::to_string),
            body: body.map(str::to_string),
            session_token: None,
            region: "west".into(),
            node: "server-1".into(),
        }
    }

    impl Builder {
        /// client-0 creates k (e1) and replaces it (e2).
        pub(crate) fn create_then_replace() -> Builder {
            let mut b = Builder::new();
            b.write("client-0", "create", "k", "b1", None, (0, 10), Some("e1"));
            b.write(
                "client-0",
                "replace",
                "k",
                "b2",
                Some("e1"),
                (20, 30),
                Some("e2"),
            );
            b
        }

        pub(crate) fn new() -> Builder {
            Builder {
                h: RegionsHistory::of_ops(vec![]),
            }
        }

        #[allow(clippy::too_many_arguments)]
        fn push(
            &mut self,
            session: &str,
            op: &str,
            item: &str,
            body: Option<&str>,
            if_match: Option<&str>,
            consistency: Consistency,
            (inv, ret): (u64, Option<u64>),
            result: Option<RegionOutcome>,
        ) -> u64 {
            let id = self.h.ops.len() as u64;
            let seq = self
                .h
                .ops
                .iter()
                .filter(|o| o.call.session == session)
                .count() as u64;
            let client = session
                .trim_start_matches("client-")
                .split('#')
                .next()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            self.h.ops.push(RegionOp {
                id,
                client,
                key: item.into(),
                call: RegionCall {
                    op: op.into(),
                    item: item.into(),
                    body: body.map(str::to_string),
                    if_match: if_match.map(str::to_string),
                    consistency,
                    session_token: Some("p0:1".into()),
                    session: session.into(),
                    seq,
                },
                invoke_ns: inv,
                return_ns: if result.is_some() { ret } else { None },
                result,
                attempts: vec![],
            });
            id
        }

        /// A write (`create`, `replace`, `upsert`) acknowledged with `etag`
        /// (`None`: its outcome is unknown).
        // A test's history reads best with every field of the write spelled
        // out at the call.
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn write(
            &mut self,
            session: &str,
            op: &str,
            item: &str,
            body: &str,
            if_match: Option<&str>,
            at: (u64, u64),
            etag: Option<&str>,
        ) -> u64 {
            let status = if op == "create" { 201 } else { 200 };
            let result = etag.map(|e| ok(status, Some(e), Some(body)));
            self.push(
                session,
                op,
                item,
                Some(body),
                if_match,
                Consistency::Session,
                (at.0, Some(at.1)),
                result,
            )
        }

        /// A delete acknowledged with 204.
        pub(crate) fn delete(
            &mut self,
            session: &str,
            item: &str,
            if_match: Option<&str>,
            at: (u64, u64),
        ) -> u64 {
            self.push(
                session,
                "delete",
                item,
                None,
                if_match,
                Consistency::Session,
                (at.0, Some(at.1)),
                Some(ok(204, None, None)),
            )
        }

        /// A read that returned `etag` and `body`.
        pub(crate) fn read(
            &mut self,
            session: &str,
            consistency: Consistency,
            item: &str,
            at: (u64, u64),
            etag: &str,
            body: &str,
        ) -> u64 {
            self.push(
                session,
                "read",
                item,
                None,
                None,
                consistency,
                (at.0, Some(at.1)),
                Some(ok(200, Some(etag), Some(body))),
            )
        }

        /// A read that failed with `status`/`sub_status`.
        pub(crate) fn failed_read(
            &mut self,
            session: &str,
            item: &str,
            at: (u64, u64),
            status: u16,
            sub_status: u16,
        ) -> u64 {
            self.push(
                session,
                "read",
                item,
                None,
                None,
                Consistency::Session,
                (at.0, Some(at.1)),
                Some(RegionOutcome::Failed {
                    status,
                    sub_status,
                    region: Some("east".into()),
                    node: Some("server-4".into()),
                }),
            )
        }

        /// A node event at true time `at_ns` (local clock = true time in ms).
        pub(crate) fn event(&mut self, node: &str, at_ns: u64, event: RegionEvent) {
            self.h.node_events.push(overcast_sim::history::NodeEvent {
                node: node.into(),
                at_ns,
                local_ms: at_ns / 1_000_000,
                event,
            });
        }
    }
}
use overcast_scenarios::services::regions::history::*;

#[test]
fn records_round_trip_through_json_and_unknown_fields_are_refused() {
    let call = RegionCall {
        op: "replace".into(),
        item: "k1".into(),
        body: Some("b7".into()),
        if_match: Some("e3".into()),
        consistency: Consistency::Session,
        session_token: None,
        session: "client-0#1".into(),
        seq: 4,
    };
    let text = serde_json::to_string(&call).unwrap();
    assert_eq!(serde_json::from_str::<RegionCall>(&text).unwrap(), call);
    assert!(text.contains("\"consistency\":\"session\""));
    let out = RegionOutcome::Failed {
        status: 404,
        sub_status: 1002,
        region: Some("west".into()),
        node: None,
    };
    let text = serde_json::to_string(&out).unwrap();
    assert!(text.contains("\"kind\":\"failed\""));
    assert_eq!(serde_json::from_str::<RegionOutcome>(&text).unwrap(), out);
    let ev = RegionEvent::Route {
        op_id: 4,
        what: route::MARK_UNAVAILABLE.into(),
        region: "west".into(),
        status: 503,
        sub_status: 0,
        for_ms: Some(300),
    };
    let text = serde_json::to_string(&ev).unwrap();
    assert_eq!(serde_json::from_str::<RegionEvent>(&text).unwrap(), ev);
    assert!(serde_json::from_str::<RegionCall>(
        r#"{"op":"read","item":"k","consistency":"eventual","colour":"red"}"#
    )
    .is_err());
}

#[test]
fn the_session_is_the_incarnation_name_or_else_the_client_index() {
    let mut op = RegionOp {
        id: 0,
        client: 2,
        key: "k".into(),
        call: serde_json::from_str(r#"{"op":"read","item":"k","consistency":"session"}"#).unwrap(),
        invoke_ns: 0,
        return_ns: None,
        result: None,
        attempts: vec![],
    };
    assert_eq!(session_of(&op), "client-2");
    op.call.session = "client-2#1".into();
    assert_eq!(session_of(&op), "client-2#1");
}

mod order_tests {
    use super::build::Builder;
    use overcast_scenarios::services::regions::history::*;

    #[test]
    fn if_match_chains_order_versions_before_real_time_does() {
        let mut b = Builder::new();
        b.write("client-0", "create", "k", "b1", None, (0, 10), Some("e1"));
        b.write(
            "client-1",
            "replace",
            "k",
            "b2",
            Some("e1"),
            (20, 30),
            Some("e2"),
        );
        b.write("client-0", "upsert", "k", "b3", None, (40, 50), Some("e3"));
        b.write("client-1", "upsert", "k", "b4", None, (45, 55), Some("e4"));
        let o = ItemOrder::build(&b.h.ops);
        let n = |e: &str| o.etag(e).unwrap();
        assert_eq!(o.order(n("e1"), n("e2")), Order::Before(Basis::Chain));
        assert_eq!(o.order(n("e2"), n("e1")), Order::After(Basis::Chain));
        assert_eq!(o.order(n("e1"), n("e3")), Order::Before(Basis::RealTime));
        assert_eq!(o.order(n("e3"), n("e4")), Order::Unordered);
        assert_eq!(o.order(n("e2"), n("e2")), Order::Same);
    }

    #[test]
    fn a_write_of_unknown_outcome_is_placed_by_a_read_of_its_body() {
        let mut b = Builder::new();
        b.write("client-0", "create", "k", "b1", None, (0, 10), Some("e1"));
        b.write("client-0", "replace", "k", "b2", Some("e1"), (20, 30), None);
        b.read("client-1", Consistency::Eventual, "k", (40, 50), "e2", "b2");
        let o = ItemOrder::build(&b.h.ops);
        let (e1, e2) = (o.etag("e1").unwrap(), o.etag("e2").unwrap());
        assert_eq!(o.order(e1, e2), Order::Before(Basis::Chain));
        assert_eq!(o.writer(e2), Some(1));
    }
}
