//! Tests of `overcast_scenarios::kit::bridge`.
use overcast_model::env::ServerDraws;
use overcast_scenarios::kit::bridge::*;
use overcast_sim::world::{Role, Topology};
use std::net::SocketAddr;
use std::sync::Arc;

#[test]
fn a_request_keeps_its_name_and_streams_whatever_came_before() {
    let topology = Arc::new(Topology::new(vec![
        Role::new("server", 1),
        Role::new("client", 2),
    ]));
    // An SDK client's datagrams come from an ephemeral port of its node's IP.
    let at = |i| SocketAddr::new(topology.addr("client", i).unwrap().ip(), 1);
    let (a, b) = (at(0), at(1));
    assert_eq!(topology.node_at(a).as_deref(), Some("client-0"));
    let alone = ServerStreams::new(7, "server-0-0", Some(topology.clone()));
    let busy = ServerStreams::new(7, "server-0-0", Some(topology.clone()));
    busy.request(b);
    busy.request(b);
    let first = alone.request(a);
    assert_eq!(
        busy.request(a),
        first,
        "another sender's requests do not move this one's name"
    );
    let second = alone.request(a);
    assert_ne!(
        second, first,
        "a retry from the same sender is another request"
    );
    let draw = |s: &ServerStreams, what: &[u64]| s.stream(what).next_u64();
    assert_eq!(draw(&alone, &[1, first]), draw(&busy, &[1, first]));
    assert_ne!(draw(&alone, &[1, first]), draw(&alone, &[1, second]));
    assert_ne!(draw(&alone, &[2, first]), draw(&alone, &[2, first, second]));
    let restarted = ServerStreams::new(7, "server-0-1", Some(topology));
    assert_ne!(draw(&restarted, &[1, first]), draw(&alone, &[1, first]));
}
