//! Tests of `overcast_scenarios::services::queues::timeline`.
use overcast_model::connector::Source;
use overcast_model::queue::QueueRequest;
use overcast_scenarios::services::queues::history::Call;
use overcast_scenarios::services::queues::timeline::*;

#[test]
fn a_poll_reads_in_the_services_words() {
    let call = Call {
        node: "connector-0".into(),
        source: Source::Worker,
        request: QueueRequest::Poll {
            datasource: "repo".into(),
            queue: Some("FullTraversal||A: repo".into()),
            statuses: vec![],
            limit: Some(3),
        },
    };
    let (w, _) = words(&call, None);
    assert_eq!(w, "poll 'FullTraversal||A: repo' limit 3");
    assert!(!w.contains('{') && !w.contains("Some("));
}
