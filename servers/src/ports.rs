//! Picks free loopback TCP ports for servers to listen on.
//!
//! The kernel hands out the ports; they are released again before the server binds them, so
//! another process can take one in between. Server start-up therefore retries with fresh ports
//! when a server reports "address already in use".

use std::io;
use std::net::{Ipv4Addr, TcpListener};

/// Returns `n` distinct free ports on 127.0.0.1, by binding `n` listeners to port 0 at the same
/// time, reading their ports and closing them.
pub fn free_ports(n: usize) -> io::Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ports_are_distinct_and_bindable() {
        let ports = free_ports(5).expect("ports");
        assert_eq!(ports.iter().collect::<HashSet<_>>().len(), 5);
        assert!(ports.iter().all(|&port| port != 0));
        // Another process may grab a released port at any moment (it is the same range the
        // kernel picks outgoing ports from), so only most of them must still be free.
        let bindable = ports
            .iter()
            .filter(|&&port| TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok())
            .count();
        assert!(
            bindable >= 3,
            "only {bindable} of {ports:?} could be bound again"
        );
    }
}
