//! Tests of `harness/src/saved.rs`.

use overcast_harness::saved::*;

#[test]
fn shell_words_are_quoted_when_they_need_it() {
    assert_eq!(
        shell_word("target/release/overcast"),
        "target/release/overcast"
    );
    assert_eq!(shell_word("/tmp/my dir/x"), "'/tmp/my dir/x'");
    assert_eq!(shell_word("it's"), r"'it'\''s'");
    assert_eq!(shell_word(""), "''");
}
