//! Tests of `overcast_scenarios::kit::words`.
use overcast_scenarios::kit::words::*;

#[test]
fn etags_are_shortened_to_their_tail_and_stars_stay() {
    assert_eq!(short_etag("\"0x8D0000000000002A\""), "…002A");
    assert_eq!(short_etag("*"), "*");
    assert_eq!(
        conditions_words(Some("\"0x8D00000000000001\""), None),
        " If-Match …0001"
    );
}
