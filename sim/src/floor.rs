//! The bare-madsim floor: the same topology and message count as a harness
//! run, as plain ping-pong with no model, faults, recording or checking, so
//! that the harness's overhead over the simulator itself can be measured.

use madsim::net::Endpoint;
use madsim::runtime::{Handle, Runtime};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Runs `clients` clients that each send `round_trips` requests of
/// `payload` bytes, one at a time, to one of `servers` echo servers, and
/// wait for each answer. Returns the number of messages delivered.
pub fn ping_pong(
    seed: u64,
    servers: usize,
    clients: usize,
    round_trips: usize,
    payload: usize,
) -> usize {
    let rt = Runtime::with_seed_and_config(seed, madsim::Config::default());
    let server_addr =
        |i: usize| SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 9, 0, 1 + i as u8)), 9000);
    let mut ids = Vec::new();
    for i in 0..servers.max(1) {
        let node = rt
            .create_node()
            .name(format!("echo-{i}"))
            .ip(server_addr(i).ip())
            .init(move || async move {
                let ep = Endpoint::bind(server_addr(i)).await.expect("bind");
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    if let Ok((n, from)) = ep.recv_from(1, &mut buf).await {
                        let _ = ep.send_to(from, 2, &buf[..n]).await;
                    }
                }
            })
            .build();
        ids.push(node.id());
    }
    let delivered = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    for c in 0..clients {
        let delivered = delivered.clone();
        let done = done.clone();
        let node = rt
            .create_node()
            .name(format!("pinger-{c}"))
            .ip(IpAddr::V4(Ipv4Addr::new(10, 9, 1, 1 + c as u8)))
            .init(move || {
                let delivered = delivered.clone();
                let done = done.clone();
                async move {
                    let ep = Endpoint::bind("0.0.0.0:0").await.expect("bind");
                    let msg = vec![7u8; payload];
                    let mut buf = vec![0u8; 64 * 1024];
                    for k in 0..round_trips {
                        let to = server_addr((c + k) % servers.max(1));
                        let _ = ep.send_to(to, 1, &msg).await;
                        if ep.recv_from(2, &mut buf).await.is_ok() {
                            delivered.fetch_add(2, Ordering::Relaxed);
                        }
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                    std::future::pending::<()>().await;
                }
            })
            .build();
        ids.push(node.id());
    }
    let d = done.clone();
    rt.block_on(async move {
        while d.load(Ordering::Relaxed) < clients {
            madsim::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let h = Handle::current();
        for id in ids {
            h.kill(id);
        }
    });
    delivered.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_message_is_delivered() {
        assert_eq!(super::ping_pong(1, 2, 3, 10, 100), 60);
    }
}
