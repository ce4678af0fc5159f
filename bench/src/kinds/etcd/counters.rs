//! etcd's outside counters: `/metrics` (gRPC calls by method, messages received, `LeaseKeepAlive`
//! messages, `process_cpu_seconds_total`); the CPU time of a server lockbench started from `/proc`.

use std::net::SocketAddr;

use lockbench_servers::probe;

use crate::kinds::counters::{COUNTERS_TIMEOUT, StatsSnapshot, one_node};

/// The counters of an etcd server (one endpoint).
pub(crate) fn read(
    nodes: &[(SocketAddr, Option<u32>)],
    _auth: Option<(&str, &str)>,
) -> Option<StatsSnapshot> {
    one_node(nodes, |socket, pid| {
        let metrics = probe::http_get(socket, "/metrics", COUNTERS_TIMEOUT)
            .ok()?
            .body;
        Some(etcd_metrics(&metrics).with_process_cpu(pid))
    })
}

/// `grpc_server_handled_total{...grpc_method="Range"...} N`, summed by method (calls completed: a
/// stream counts once, when it ends); `grpc_server_msg_received_total` summed over every method (each
/// message a client sent, every keep-alive on the lease stream included); `process_cpu_seconds_total`.
fn etcd_metrics(metrics: &str) -> StatsSnapshot {
    let mut snapshot = StatsSnapshot::default();
    for line in metrics.lines() {
        if let Some(value) = line.strip_prefix("process_cpu_seconds_total ") {
            snapshot.cpu_seconds = value.trim().parse().ok();
        } else if let Some(labels) = line.strip_prefix("grpc_server_msg_received_total{") {
            if let Some(Ok(value)) = labels
                .rsplit_once("} ")
                .map(|(_, v)| v.trim().parse::<f64>())
            {
                *snapshot.client_requests.get_or_insert(0) += value as u64;
                if labels.contains("grpc_method=\"LeaseKeepAlive\"") {
                    *snapshot.renew_calls.get_or_insert(0) += value as u64;
                }
            }
        } else if let Some(labels) = line.strip_prefix("grpc_server_handled_total{") {
            let Some((labels, value)) = labels.rsplit_once("} ") else {
                continue;
            };
            let method = labels
                .split(',')
                .find_map(|kv| kv.strip_prefix("grpc_method=\""))
                .map(|m| m.trim_end_matches('"'));
            if let (Some(method), Ok(value)) = (method, value.trim().parse::<f64>()) {
                *snapshot.requests.entry(method.to_owned()).or_default() += value as u64;
            }
        }
    }
    snapshot
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn parses_metrics() {
        let etcd = "process_cpu_seconds_total 2.5\ngrpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Range\",grpc_service=\"x\",grpc_type=\"unary\"} 7\ngrpc_server_handled_total{grpc_code=\"Unavailable\",grpc_method=\"Range\",grpc_service=\"x\",grpc_type=\"unary\"} 1\n";
        let s = etcd_metrics(etcd);
        assert_eq!(s.cpu_seconds, Some(2.5));
        assert_eq!(s.requests, BTreeMap::from([("Range".to_owned(), 8)]));
        let stream = "grpc_server_msg_received_total{grpc_method=\"LeaseKeepAlive\",grpc_service=\"etcdserverpb.Lease\",grpc_type=\"bidi_stream\"} 40\ngrpc_server_msg_received_total{grpc_method=\"Range\",grpc_service=\"x\",grpc_type=\"unary\"} 8\ngrpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Range\",grpc_service=\"x\",grpc_type=\"unary\"} 8\n";
        let s = etcd_metrics(stream);
        assert_eq!(
            s.client_requests,
            Some(48),
            "keep-alive stream messages count"
        );
        assert_eq!(s.renew_calls, Some(40), "the keep-alives are the renewals");
        assert_eq!(s.requests.values().sum::<u64>(), 8);
    }
}
