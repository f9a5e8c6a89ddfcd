//! Tests of `overcast_scenarios::conformance::time`.
use overcast_scenarios::conformance::time::*;
use overcast_sim::clock::EPOCH_MS;

#[test]
fn the_simulation_epoch_is_thursday_the_first_of_january_2026() {
    assert_eq!(format_rfc1123(EPOCH_MS), "Thu, 01 Jan 2026 00:00:00 GMT");
    assert_eq!(parse_rfc1123("Thu, 01 Jan 2026 00:00:00 GMT"), Ok(EPOCH_MS));
}

#[test]
fn dates_round_trip_and_a_wrong_weekday_is_refused() {
    for ms in [0, EPOCH_MS + 5_000, EPOCH_MS + 86_400_000 * 400 + 3_723_000] {
        assert_eq!(parse_rfc1123(&format_rfc1123(ms)), Ok(ms));
    }
    assert!(parse_rfc1123("Fri, 01 Jan 2026 00:00:00 GMT").is_err());
    assert!(parse_rfc1123("Thu, 31 Feb 2026 00:00:00 GMT").is_err());
    assert_eq!(
        format_rfc1123(EPOCH_MS + 1_250),
        "Thu, 01 Jan 2026 00:00:01.250 GMT"
    );
}

#[test]
fn durations_take_a_unit() {
    assert_eq!(parse_duration("250ms"), Ok(250));
    assert_eq!(parse_duration("2s"), Ok(2000));
    assert_eq!(parse_duration("1min"), Ok(60_000));
    assert!(parse_duration("5").is_err());
    assert_eq!(parse_duration("4h"), Ok(14_400_000));
    assert_eq!(parse_duration("7d"), Ok(604_800_000));
    assert!(parse_duration("5w").is_err());
}
