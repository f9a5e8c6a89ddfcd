//! Tests of `overcast_scenarios::kit::dialects`.
use overcast_model::server::FaultRates;
use overcast_scenarios::kit::dialects::*;

#[derive(Clone, Debug, PartialEq)]
struct Sizes {
    clients: usize,
    ops: usize,
    servers: usize,
    faults: FaultRates,
}

impl StoreParams for Sizes {
    fn size(&mut self) -> StoreSize<'_> {
        StoreSize {
            clients: &mut self.clients,
            ops_per_client: &mut self.ops,
            servers: &mut self.servers,
            server_faults: &mut self.faults,
        }
    }
}

#[test]
fn each_reduction_lowers_its_own_count_and_stops_at_one() {
    let p = Sizes {
        clients: 5,
        ops: 1,
        servers: 2,
        faults: overcast_scenarios::kit::server::default_server_faults(),
    };
    let reductions = store_reductions::<Sizes>();
    let apply = |name: &str, p: &Sizes| {
        let (_, r) = reductions.iter().find(|(n, _)| *n == name).unwrap();
        assert_eq!(r(p, 1), None, "{name} has one candidate");
        r(p, 0)
    };
    assert_eq!(apply("halve the clients", &p).unwrap().clients, 2);
    assert_eq!(apply("one client fewer", &p).unwrap().clients, 4);
    assert_eq!(apply("halve the operations", &p), None);
    assert_eq!(apply("one operation fewer", &p), None);
    let fewer = apply("one server fewer", &p).unwrap();
    assert_eq!((fewer.servers, fewer.clients), (1, 5));
    assert_eq!(apply("one server fewer", &fewer), None);
    let calm = apply("no server fault points", &p).unwrap();
    assert_eq!(calm.faults.throttle, 0.0);
    assert_eq!(apply("no server fault points", &calm), None);
}
