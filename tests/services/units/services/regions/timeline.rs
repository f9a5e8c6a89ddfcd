//! Tests of `overcast_scenarios::services::regions::timeline`.
use overcast_scenarios::services::regions::history::Consistency;
use overcast_scenarios::services::regions::history::{RegionCall, RegionOutcome};
use overcast_scenarios::services::regions::timeline::*;
use overcast_sim::timeline::Tone;

#[test]
fn a_read_reads_in_the_services_words_not_as_json() {
    let call = RegionCall {
        op: "read".into(),
        item: "k0".into(),
        body: None,
        if_match: None,
        consistency: Consistency::Strong,
        session_token: None,
        session: String::new(),
        seq: 0,
    };
    let out = RegionOutcome::Ok {
        status: 200,
        etag: Some("\"0x8D000000000000000B\"".into()),
        body: Some("client-2.59".into()),
        session_token: None,
        region: "r0".into(),
        node: "replica-0".into(),
    };
    let (w, tone) = words(&call, Some(&out));
    assert_eq!(
        w,
        "read k0 strong → 200 \"client-2.59\" …000B from r0/replica-0"
    );
    assert_eq!(tone, Tone::Ok);
    assert!(!w.contains('{'));
}
