//! Tests of `harness/src/params.rs`.

use overcast_harness::params::*;

#[test]
fn a_zero_count_names_its_whole_group() {
    assert_eq!(at_least_one(&[("servers", 2), ("clients", 1)]), Ok(()));
    assert_eq!(
        at_least_one(&[("servers", 2), ("clients", 0)])
            .unwrap_err()
            .to_string(),
        "servers and clients must be at least 1"
    );
    assert_eq!(
        at_least_one(&[("a", 0), ("b", 1), ("c", 1)])
            .unwrap_err()
            .to_string(),
        "a, b and c must be at least 1"
    );
    assert_eq!(
        at_least_one(&[("holders", 0)]).unwrap_err().to_string(),
        "holders must be at least 1"
    );
}

#[test]
fn the_first_range_out_of_order_is_named() {
    assert_eq!(ordered(&[("a_ms", (1u64, 2)), ("b_ms", (3, 3))]), Ok(()));
    assert_eq!(
        ordered(&[("a_ms", (1u64, 2)), ("b_ms", (4, 3)), ("c_ms", (9, 1))])
            .unwrap_err()
            .to_string(),
        "b_ms has its low end above its high end"
    );
}

#[test]
fn a_probability_outside_zero_to_one_is_named() {
    assert_eq!(probabilities(&[("p", 0.0), ("q", 1.0)]), Ok(()));
    assert_eq!(
        probabilities(&[("p", 0.5), ("q", 1.5)])
            .unwrap_err()
            .to_string(),
        "q must be between 0 and 1"
    );
    assert!(probabilities(&[("nan", f64::NAN)]).is_err());
}

#[test]
fn a_size_past_its_limit_is_refused_in_one_line() {
    let limits = [SizeLimit::new("keys", 10)];
    let ok = serde_json::json!({"keys": 10});
    let big = serde_json::json!({"keys": 11});
    assert_eq!(check_limits("toy", &limits, &ok), Ok(()));
    let e = check_limits("toy", &limits, &big).unwrap_err().to_string();
    assert!(
        e.starts_with("keys is 11, more than toy is built for (at most 10"),
        "{e}"
    );
}
