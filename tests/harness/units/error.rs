//! Tests of `harness/src/error.rs`.

use overcast_harness::error::*;
use overcast_harness::params::ParamError;
use std::path::Path;

#[test]
fn each_error_is_one_line_in_the_words_the_cli_prints() {
    assert_eq!(
        HarnessError::unknown("scenario", "ocd", ["occ", "leases"]).to_string(),
        "unknown scenario 'ocd' (known: occ, leases)"
    );
    assert_eq!(
        HarnessError::from(ParamError::new("clients must be at least 1")).to_string(),
        "clients must be at least 1"
    );
    assert_eq!(
        HarnessError::read(Path::new("a/b.json"), "No such file").to_string(),
        "cannot read a/b.json: No such file"
    );
    assert_eq!(
        HarnessError::invalid("not JSON: x").to_string(),
        "not JSON: x"
    );
}
