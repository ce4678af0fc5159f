//! What `lockbench scale` reads of an etcd while its client only holds locks: its keys (a
//! count-only range), and the `LeaseKeepAlive` messages it received (the renewals).

use std::net::SocketAddr;

use lockbench_servers::probe;

use crate::kinds::held::{HELD_TIMEOUT, HeldProbe, own_process_cpu_seconds};

/// The held-lock probe of an etcd.
pub(super) const HELD: HeldProbe = HeldProbe {
    locks_held,
    process_cpu_seconds: own_process_cpu_seconds,
    script_stats: None,
    renewal_messages: Some(|addr| {
        probe::http_get(addr, "/metrics", HELD_TIMEOUT)
            .ok()
            .map(|r| etcd_keepalives_received(&r.body))
    }),
    renewal_counter: None,
    prepare: None,
    clean: None,
};

/// Keys in etcd (a count-only range over every key).
fn locks_held(addr: SocketAddr) -> Option<u64> {
    // Every key: from "\0" to the end of the keyspace ("\0" as range_end), base64.
    let body = r#"{"key":"AA==","range_end":"AA==","count_only":true}"#;
    let reply = probe::http_post(addr, "/v3/kv/range", body, HELD_TIMEOUT).ok()?;
    etcd_count(&reply.body)
}

/// `count` of an etcd range reply (the gateway spells int64 as a string; absent when zero).
fn etcd_count(body: &str) -> Option<u64> {
    let reply: serde_json::Value = serde_json::from_str(body).ok()?;
    reply.get("header")?;
    match reply.get("count") {
        None => Some(0),
        Some(serde_json::Value::String(n)) => n.parse().ok(),
        Some(n) => n.as_u64(),
    }
}

/// `LeaseKeepAlive` messages received (`grpc_server_msg_received_total`; the `handled` counter of a
/// stream moves only when the stream ends).
fn etcd_keepalives_received(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter_map(|line| {
            let labels = line.strip_prefix("grpc_server_msg_received_total{")?;
            let (labels, value) = labels.rsplit_once("} ")?;
            if !labels.contains("grpc_method=\"LeaseKeepAlive\"") {
                return None;
            }
            value.trim().parse::<f64>().ok()
        })
        .map(|v| v as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etcd_counts_are_read() {
        assert_eq!(
            etcd_count(r#"{"header":{"revision":"9"},"count":"42"}"#),
            Some(42)
        );
        assert_eq!(etcd_count(r#"{"header":{"revision":"9"}}"#), Some(0));
        assert_eq!(etcd_count("not json"), None);
    }

    #[test]
    fn etcd_keepalive_messages_are_counted() {
        let metrics = "grpc_server_msg_received_total{grpc_method=\"LeaseKeepAlive\",grpc_service=\"etcdserverpb.Lease\",grpc_type=\"bidi_stream\"} 42\n\
                       grpc_server_msg_received_total{grpc_method=\"Range\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 7\n\
                       grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"LeaseKeepAlive\"} 1\n";
        assert_eq!(etcd_keepalives_received(metrics), 42);
    }
}
