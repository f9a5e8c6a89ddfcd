//! Tests of `harness/src/explore/page.rs`.

use overcast_harness::explore::page::*;

#[test]
fn ticks_are_round_and_about_five() {
    assert_eq!(tick_step(16.0), 5.0);
    assert_eq!(tick_step(14.0), 5.0);
    assert_eq!(tick_step(1000.0), 200.0);
    assert_eq!(tick_step(3.0), 1.0);
}
