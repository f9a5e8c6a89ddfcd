//! Tests of `overcast_scenarios::services::leases::reference`.
use overcast_model::lease::LeaseAction;
use overcast_scenarios::services::leases::reference::*;

const A: &str = "aaaaaaaa-0000-4000-8000-000000000001";

/// A 15 s lease acquired with id `A` at 1 s: expired from 16 s.
fn fixed_lease_of_a() -> Option<RefLease> {
    step(
        None,
        &LeaseAction::Acquire {
            duration: Some(15),
            proposed_id: Some(A.into()),
        },
        1_000,
        "",
    )
    .unwrap()
}

#[test]
fn a_fixed_lease_expires_and_a_break_with_a_period_waits_for_the_sooner_end() {
    let l = fixed_lease_of_a();
    assert_eq!(state(l.as_ref(), 15_999), RefState::Leased);
    assert_eq!(state(l.as_ref(), 16_000), RefState::Expired);
    let b = step(
        l.as_ref(),
        &LeaseAction::Break {
            break_period: Some(5),
        },
        2_000,
        "",
    )
    .unwrap();
    assert_eq!(b.as_ref().and_then(|b| b.break_ms), Some(7_000));
    assert_eq!(state(b.as_ref(), 6_999), RefState::Breaking);
    assert_eq!(after_write(b.clone(), 6_999), b);
    assert_eq!(after_write(b, 7_000), None);
    let now = step(
        l.as_ref(),
        &LeaseAction::Break {
            break_period: Some(0),
        },
        3_000,
        "",
    );
    assert_eq!(state(now.unwrap().as_ref(), 1_000), RefState::Broken);
}

#[test]
fn reads_and_writes_follow_the_use_table() {
    let l = fixed_lease_of_a();
    let (leased, expired) = (2_000, 20_000);
    let other = "bbbbbbbb-0000-4000-8000-000000000002";
    use BlobUse::{Read, Write};
    let answer = |sent, now, what| use_answer(l.as_ref(), sent, now, what);
    assert_eq!(answer(None, leased, Write), Err(&["LeaseIdMissing"][..]));
    assert_eq!(answer(None, leased, Read), Ok(()));
    let upper = A.to_uppercase();
    assert_eq!(answer(Some(&upper), leased, Write), Ok(()));
    assert_eq!(
        answer(Some(other), leased, Read),
        Err(&["LeaseIdMismatchWithBlobOperation"][..])
    );
    assert_eq!(answer(None, expired, Write), Ok(()));
    assert_eq!(
        answer(Some(A), expired, Write),
        Err(&["LeaseLost", "LeaseNotPresentWithBlobOperation"][..])
    );
    assert_eq!(
        answer(Some(A), expired, Read),
        Err(&["LeaseNotPresentWithBlobOperation"][..])
    );
    assert_eq!(
        use_answer(None, Some(A), leased, Write),
        Err(&["LeaseNotPresentWithBlobOperation"][..])
    );
}
