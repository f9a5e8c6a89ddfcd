//! Tests of `harness/src/registry.rs`.

use overcast_harness::registry::*;

#[test]
fn a_value_in_words_has_no_braces_quotes_or_nulls() {
    let v =
        r#"{"op":"upsert","item":"k0","body":null,"ids":["a","b"],"cond":{"if_match":"x \"y\""}}"#;
    let w = json_words(v);
    assert_eq!(w, "op upsert item k0 ids a,b cond (if_match x \"y\")");
    assert!(!w.contains('{') && !w.contains("null"));
}

#[test]
fn a_history_client_number_leads_back_to_its_node() {
    for index in 0..3 {
        for life in 0..4 {
            let c = history_client(index, life, 3);
            assert_eq!(client_node("client", c, 3), format!("client-{index}"));
        }
    }
    assert_eq!(history_client(1, 2, 8), 17);
    // A check's own clients keep their number.
    assert_eq!(
        client_node("client", CHECK_CLIENTS + 2, 3),
        format!("client-{}", CHECK_CLIENTS + 2)
    );
}
