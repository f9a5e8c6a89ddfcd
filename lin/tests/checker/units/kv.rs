//! Tests of `lin/src/kv.rs`: the key-value model and its partitioned search.
use overcast_lin::kv::*;
use overcast_lin::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

const DOC: &str = r#"{"format":"kvhist/1","init":{"x":{"value":"0","version":2}},"ops":[
    {"id":0,"client":0,"key":"x","f":"put","value":"1","call":0,"ret":10,"out":{"version":3}},
    {"id":1,"client":1,"key":"x","f":"cas","expect":null,"value":"2","call":1,"ret":9,"out":{"ok":false}},
    {"id":2,"client":2,"key":"x","f":"cput","expect_version":3,"value":"3","call":11},
    {"id":3,"client":3,"key":"y","f":"get","call":12,"ret":13,"out":{"value":null,"version":0}}]}"#;

#[test]
fn parses_the_format() {
    let h = parse_kvhist(DOC).expect("parse");
    assert_eq!(h.ops.len(), 4);
    assert!(h.spec.track_versions);
    assert_eq!(h.spec.init("x").version, 2);
    assert_eq!(h.ops[2].output, None);
    assert_eq!(h.ops[2].ret, None);
    assert_eq!(
        h.spec
            .claim(&h.ops[0].input, h.ops[0].output.as_ref().unwrap()),
        Claim::Produced(3)
    );
    assert!(h
        .spec
        .is_read_only(&h.ops[1].input, h.ops[1].output.as_ref()));
}

#[test]
fn steps_follow_the_semantics() {
    let spec = KvSpec {
        init: BTreeMap::new(),
        track_versions: true,
    };
    let s0 = spec.init("k");
    let v = |x: &str| Val::from(x);
    let put = KvInput::Put { value: v("a") };
    let Next::One(s1) = spec.step(&s0, &put, Some(&KvOutput::Put { version: Some(1) })) else {
        panic!("put must apply");
    };
    assert_eq!(s1.version, 1);
    assert!(!spec
        .step(&s0, &put, Some(&KvOutput::Put { version: Some(2) }))
        .is_legal());
    let cas = KvInput::Cas {
        expect: Some(v("a")),
        value: v("b"),
    };
    assert!(spec
        .step(
            &s1,
            &cas,
            Some(&KvOutput::Cond {
                ok: true,
                version: None
            })
        )
        .is_legal());
    assert!(!spec
        .step(
            &s0,
            &cas,
            Some(&KvOutput::Cond {
                ok: true,
                version: None
            })
        )
        .is_legal());
    // An unknown cas applies only where its comparison holds.
    assert_eq!(spec.step(&s0, &cas, None), Next::One(s0.clone()));
    let cput = KvInput::Cput {
        expect_version: 0,
        value: v("c"),
    };
    assert!(spec
        .step(
            &s0,
            &cput,
            Some(&KvOutput::Cond {
                ok: true,
                version: Some(1)
            })
        )
        .is_legal());
    assert!(!spec
        .step(
            &s1,
            &cput,
            Some(&KvOutput::Cond {
                ok: true,
                version: None
            })
        )
        .is_legal());
}

#[test]
fn errors_are_one_line() {
    for bad in [
        "",
        "{",
        "[]",
        "{\"ops\":[{}]}",
        "{\"ops\":[{\"client\":-1}]}",
        "{\"ops\":5}",
    ] {
        let e = parse_kvhist(bad).expect_err(bad);
        assert!(!e.contains('\n') && !e.is_empty(), "{e:?}");
    }
}

#[test]
fn errors_name_the_json_path_of_the_bad_field() {
    let no_value = r#"{"ops":[{"client":0,"key":"x","f":"get","call":0,"ret":1,"out":{}}]}"#;
    assert_eq!(
        parse_kvhist(no_value).expect_err("get without out.value"),
        "ops[0]: a get's out needs \"value\" (a string, or null for absent)"
    );
    let bad_version = r#"{"ops":[
        {"client":0,"key":"x","f":"put","value":"1","call":0,"ret":1,"out":{}},
        {"client":0,"key":"x","f":"put","value":"1","call":2,"ret":3,"out":{"version":-1}}]}"#;
    let e = parse_kvhist(bad_version).expect_err("negative version");
    assert!(e.starts_with("ops[1].out.version: invalid value"), "{e}");
    let no_client = r#"{"ops":[{"key":"x","f":"get","call":0}]}"#;
    let e = parse_kvhist(no_client).expect_err("missing client");
    assert!(e.starts_with("ops[0]: missing field `client`"), "{e}");
    let bad_f = r#"{"ops":[{"client":0,"key":"x","f":"incr","call":0}]}"#;
    let e = parse_kvhist(bad_f).expect_err("unknown f");
    assert!(e.starts_with("ops[0].f: unknown variant `incr`"), "{e}");
    let backwards = r#"{"ops":[{"client":0,"key":"x","f":"get","call":9,"ret":5}]}"#;
    assert_eq!(
        parse_kvhist(backwards).expect_err("ret before call"),
        "ops[0]: \"ret\" (5) is before \"call\" (9)"
    );
    let other = r#"{"format":"kvhist/2","ops":[]}"#;
    assert!(parse_kvhist(other)
        .expect_err("format")
        .contains("kvhist/2"));
}

#[test]
fn free_form_fields_are_ignored() {
    let doc = r#"{"meta":{"expected":"linearizable","args":[1,2]},"ops":[
        {"id":"a-string","client":0,"key":"x","f":"get","call":0,"ret":1,"out":{"value":null},"note":"x"}]}"#;
    let h = parse_kvhist(doc).expect("parse");
    assert_eq!(h.expected.as_deref(), Some("linearizable"));
    assert_eq!(h.ops[0].id, 0);
    assert!(!h.spec.track_versions);
}

/// Documents the hand-written reader gives up on or must read exactly as
/// serde does.
const ODD: &[&str] = &[
    r#"{"ops":[{"id":-3,"client":0,"key":"x","f":"get","call":-5,"ret":-1,"out":{"value":null}}]}"#,
    r#"{"ops":[{"id":1.5,"client":0,"key":"x","f":"get","call":0}]}"#,
    r#"{"ops":[{"id":"a","client":0,"key":"x","f":"get","call":0,"zz":[1,{"a":[true,false,null]}]}]}"#,
    r#"{"ops":[{"client":0,"client":1,"key":"x","f":"get","call":0}]}"#,
    r#"{"ops":[{"client":0,"key":"x\n","f":"get","call":0}]}"#,
    r#"{"ops":[{"client":0,"key":"x","f":"get","call":01}]}"#,
    r#"{"ops":[{"client":0,"key":"x","f":"get","call":-0}]}"#,
    r#"{"ops":[{"client":18446744073709551615,"key":"x","f":"get","call":-9223372036854775808}]}"#,
    r#"{"ops":[{"client":18446744073709551616,"key":"x","f":"get","call":0}]}"#,
    r#"{"ops":[{"client":0,"key":"x","f":"cas","expect":null,"value":null,"call":0,"ret":null,"out":null}]}"#,
    r#"{"init":{"x":{"value":"a","version":1},"x":{"value":null}},"ops":[]}"#,
    r#"{"meta":{"expected":5},"ops":[],"format":null}"#,
    r#"{"meta":{"expected":"linearizable","expected":"x"},"ops":[]}"#,
    r#" { "ops" : [ ] } x"#,
    r#"{"ops":[],}"#,
    r#"{"ops":[{"client":0,"key":"x","f":"get","call":0,}]}"#,
];

#[test]
fn the_hand_written_reader_reads_as_serde_does() {
    for doc in ODD.iter().copied().chain([DOC]) {
        if let Some(scanned) = gathered_by(doc, Reader::Scan) {
            assert_eq!(Some(scanned), gathered_by(doc, Reader::Serde), "{doc}");
        }
    }
    // The common case is read by the hand-written reader.
    assert!(gathered_by(DOC, Reader::Scan).is_some());
    let g = overcast_lin::gen::generate(&overcast_lin::gen::GenOptions {
        seed: 5,
        ops: 300,
        clients: 8,
        keys: 3,
        unknown_writes: 0.1,
        unknown_reads: 0.1,
        ..overcast_lin::gen::GenOptions::default()
    });
    let text = to_kvhist(&g.spec, &g.ops, Some("linearizable"));
    let scanned = gathered_by(&text, Reader::Scan);
    assert!(scanned.is_some());
    assert_eq!(scanned, gathered_by(&text, Reader::Serde));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn the_readers_agree_on_mangled_input(cut in 0usize..600, at in 0usize..600, junk in "[\\[\\]{}\",:a-z0-9 .e-]{0,6}") {
        let mut t = DOC.to_string();
        if t.is_char_boundary(at.min(t.len())) {
            t.insert_str(at.min(t.len()), &junk);
        }
        let s: String = t.chars().take(cut.max(1) + 300).collect();
        for doc in [&t, &s] {
            if let Some(scanned) = gathered_by(doc, Reader::Scan) {
                prop_assert_eq!(Some(scanned), gathered_by(doc, Reader::Serde), "{}", doc);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn never_panics_on_mangled_input(cut in 0usize..600, at in 0usize..600, junk in "[\\[\\]{}\",:a-z0-9 -]{0,6}") {
        let mut s: String = DOC.chars().take(cut.max(1)).collect();
        let at = at.min(s.len());
        if s.is_char_boundary(at) {
            s.insert_str(at, &junk);
        }
        let _ = parse_kvhist(&s);
        let mut t = DOC.to_string();
        if t.is_char_boundary(at.min(t.len())) {
            t.insert_str(at.min(t.len()), &junk);
        }
        let _ = parse_kvhist(&t);
    }
}
