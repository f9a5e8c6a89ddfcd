//! Tests of `harness/src/sweep.rs`.

use overcast_harness::sweep::*;

#[test]
fn the_shards_of_a_range_are_disjoint_and_cover_it() {
    let seeds: Vec<u64> = (10..47).collect();
    let mut all: Vec<u64> = (1..=5).flat_map(|k| shard(&seeds, k, 5)).collect();
    all.sort();
    assert_eq!(all, seeds);
    assert_eq!(shard(&seeds, 2, 5)[..2], [11, 16]);
    assert_eq!(parse_shard("3/16"), Ok((3, 16)));
    for bad in ["0/4", "5/4", "x", "1/0", "1-4"] {
        assert!(parse_shard(bad).is_err(), "{bad}");
    }
}
