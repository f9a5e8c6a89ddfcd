//! One random stream per operation, so that leaving an operation out moves
//! no other operation's draws.
//!
//! The shrinker leaves operations out (see [`overcast_harness::ops`]), and a
//! workload's operation may draw more or less depending on what the run
//! answered or on whether it was left out. Drawn from one stream per
//! client, that would shift every later operation of the client. Each
//! operation draws instead from a stream of its own, keyed by one draw of
//! its node's stream: the node's stream draws exactly one value per
//! operation, left out or not, so operation `n` of a node is keyed by
//! (seed, node's stream, `n`) whatever the others drew.

use overcast_sim::rng::Stream;
use rand::Rng;

/// The random stream of the next operation (or round) of the node whose
/// stream is `node`: one draw of `node` keys it, so call it exactly once
/// per operation, before asking whether the operation is left out.
pub fn unit_stream(node: &mut impl Rng) -> Stream {
    let unit: rand_chacha::ChaCha8Rng = rand::SeedableRng::seed_from_u64(node.gen());
    // A stream of its own (not the bare generator): a unit drawn before a
    // branch point and still drawing after it switches with the others.
    Stream::from_key(unit.get_seed())
}
