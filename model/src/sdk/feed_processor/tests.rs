//! Tests of the change feed processor's lease rules.

use super::leases::is_available;
use super::*;

fn lease(token: u32, owner: Option<&str>, timestamp: u64) -> CachedLease {
    CachedLease {
        id: format!("cfp..{token}"),
        doc: LeaseDoc {
            token,
            min: token * 10,
            max: token * 10 + 10,
            owner: owner.map(str::to_string),
            continuation: None,
            timestamp,
            by: String::new(),
            parent: None,
        },
        etag: ETag::from_version(1),
    }
}

fn tokens(v: &[CachedLease]) -> Vec<u32> {
    v.iter().map(|l| l.doc.token).collect()
}

#[test]
fn a_lease_is_available_without_an_owner_or_strictly_after_its_expiration() {
    let l = lease(0, Some("a"), 1_000);
    assert!(!is_available(&l.doc, 61_000, 60_000), "equal is not after");
    assert!(is_available(&l.doc, 61_001, 60_000));
    assert!(is_available(&lease(0, None, 1_000).doc, 0, 60_000));
}

#[test]
fn a_newcomer_takes_free_leases_up_to_its_share() {
    let leases: Vec<_> = (0..4).map(|t| lease(t, None, 0)).collect();
    assert_eq!(tokens(&balance(&leases, "a", 0, 60_000)), vec![0, 1, 2, 3]);
    let mut leases = leases;
    leases[0].doc.owner = Some("b".into());
    leases[1].doc.owner = Some("b".into());
    // Workers b and a: target 2; a takes the two free ones.
    assert_eq!(tokens(&balance(&leases, "a", 0, 60_000)), vec![2, 3]);
}

#[test]
fn with_nothing_free_a_host_steals_one_from_the_busiest_worker() {
    let leases: Vec<_> = (0..4).map(|t| lease(t, Some("b"), 100)).collect();
    assert_eq!(tokens(&balance(&leases, "a", 200, 60_000)), vec![0]);
    // Balanced (2 and 2): nothing to do.
    let mut even = leases.clone();
    even[2].doc.owner = Some("a".into());
    even[3].doc.owner = Some("a".into());
    assert!(balance(&even, "a", 200, 60_000).is_empty());
    // 3 and 1 of 4 over 2 workers: target 2, need 1, bar 2: steal one.
    let mut uneven = leases;
    uneven[3].doc.owner = Some("a".into());
    assert_eq!(tokens(&balance(&uneven, "a", 200, 60_000)), vec![0]);
    // A tie (3 and 3, a newcomer): the victim is the last of the busiest
    // workers in query order, and the stolen lease its first (SPEC §3.3.6).
    let tie: Vec<_> = (0..6)
        .map(|t| lease(t, Some(if t < 3 { "b" } else { "c" }), 100))
        .collect();
    assert_eq!(tokens(&balance(&tie, "a", 200, 60_000)), vec![3]);
}

#[test]
fn an_expired_lease_is_taken_as_free_judged_on_the_balancers_clock() {
    let leases = vec![lease(0, Some("b"), 1_000), lease(1, Some("a"), 65_000)];
    // a's clock says 70 s: b's lease (timestamp 1 s on b's clock) expired.
    assert_eq!(tokens(&balance(&leases, "a", 70_000, 60_000)), vec![0]);
    assert!(balance(&leases, "a", 61_000, 60_000).is_empty());
}

#[test]
fn more_hosts_than_leases_leave_the_extra_host_idle() {
    let leases = vec![lease(0, Some("b"), 0), lease(1, Some("c"), 0)];
    assert!(balance(&leases, "a", 0, 60_000).is_empty());
}

#[test]
fn a_lease_document_round_trips_through_its_body_and_markers_are_not_leases() {
    let l = lease(3, Some("h"), 7);
    assert_eq!(LeaseDoc::from_body(&l.doc.to_body()), Some(l.doc.clone()));
    assert_eq!(LeaseDoc::from_body("{\"lock\":true,\"ttl\":true}"), None);
    assert_eq!(
        ProcessorOptions::scaled("h", 0.1).renew_ms,
        1_700,
        "defaults scale"
    );
}
