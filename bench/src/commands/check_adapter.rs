//! `lockbench check-adapter MANIFEST`: a team's adapter checked against its manifest before it runs
//! beside lockbench's rows. Starts the servers it needs, runs the [`protocol`] checks on one adapter
//! process, then the [`claims`] checks (the conformance suite, as the manifest claims), and prints
//! one table (check · claimed · observed · pass); exit 1 on any failure.

mod claims;
mod protocol;
mod row;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockers::Renewal;
use lockers::peer::catalog::{self, PeerSpec};

use self::claims::Remove;
use self::row::{Row, Verdict};
use crate::backends::{Backends, GivenAddresses};
use crate::base::error::{BenchError, EXIT_FAILED, EXIT_OK};
use crate::base::stdout::outln;
use crate::kinds::ServerKindExt;
use crate::strategies::{self, Endpoints};

/// The watchdog TTL the checks run with (at least the adapter's smallest).
const CHECK_TTL: Duration = Duration::from_secs(1);

/// Checks the adapter of the manifest at `manifest`; the exit code.
pub(crate) async fn command(manifest: &Path) -> Result<i32, BenchError> {
    let path = std::fs::canonicalize(manifest).map_err(|e| {
        BenchError::usage(format!(
            "adapter manifest {}: cannot read it ({e})",
            manifest.display()
        ))
    })?;
    let spec = catalog::read_manifest(&path).map_err(BenchError::usage)?;
    spec.command()
        .map_err(|e| BenchError::usage(e.to_string()))?;
    let started = Instant::now();
    let needed: BTreeSet<_> = spec.backend.into_iter().collect();
    let backends = Backends::prepare(
        &needed,
        &GivenAddresses::default(),
        strategies::check_address,
    )
    .await?;
    let endpoints = Endpoints::new(backends.endpoints());
    let servers = spec
        .backend
        .map(|kind| strategies::peer_servers(&endpoints, kind))
        .transpose()
        .map_err(|e| BenchError::failed(e.to_string()))?
        .unwrap_or_default();
    let granule = spec
        .capabilities
        .ttl_granularity
        .max(Duration::from_millis(1));
    let ttl = CHECK_TTL
        .max(spec.capabilities.min_ttl)
        .max(spec.min_watchdog_ttl);
    let ttl = granule * ttl.as_millis().div_ceil(granule.as_millis()) as u32;
    let renewal = Renewal::new(ttl);
    let log_dir =
        std::env::temp_dir().join(format!("lockbench-check-adapter-{}", std::process::id()));
    std::fs::create_dir_all(&log_dir)
        .map_err(|e| BenchError::failed(format!("cannot create {}: {e}", log_dir.display())))?;
    outln!(
        "checking {} ({} {}) from {}, {} TTL",
        spec.id,
        spec.library,
        spec.version,
        path.display(),
        crate::base::duration::format_duration(ttl)
    );
    let mut rows = protocol::check(&spec, &servers, renewal, &log_dir.join("protocol.log")).await;
    if rows
        .iter()
        .any(|r| r.check == "hello" && r.verdict == Verdict::Pass)
    {
        let remove = removal(&spec, &servers);
        rows.extend(
            quietly(claims::check(
                &spec,
                servers,
                renewal,
                log_dir.clone(),
                remove,
            ))
            .await,
        );
    } else {
        rows.push(Row::not_tested(
            "conformance",
            "as the manifest",
            "no hello",
        ));
    }
    print_table(&rows);
    let failed = rows.iter().filter(|r| r.verdict == Verdict::Fail).count();
    outln!(
        "{} in {:.0?}; adapter logs in {}",
        if failed == 0 {
            "every check passed".to_owned()
        } else {
            format!("{failed} check(s) FAILED")
        },
        started.elapsed(),
        log_dir.display()
    );
    drop(backends);
    Ok(if failed == 0 { EXIT_OK } else { EXIT_FAILED })
}

/// Runs `checks` with panics unprinted: a failed case panics, and its words go into the table.
async fn quietly<T>(checks: impl std::future::Future<Output = T>) -> T {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let out = checks.await;
    std::panic::set_hook(hook);
    out
}

/// How the checks delete locks behind their holders' backs: the kind's clean-up of a server lockbench
/// started (`FLUSHALL` on Redis and on Redlock's nodes), on every socket of the check's own servers;
/// `None` where the kind has none (those checks are then not tested).
fn removal(spec: &PeerSpec, servers: &[String]) -> Option<Remove> {
    let entry = spec.backend?.server()?;
    let clean = entry.held.clean?;
    let sockets: Vec<SocketAddr> = servers
        .iter()
        .filter_map(|address| (entry.sockets)(address).ok())
        .flatten()
        .collect();
    Some(Arc::new(move || {
        let sockets = sockets.clone();
        Box::pin(async move {
            let _ = tokio::task::spawn_blocking(move || sockets.into_iter().for_each(clean)).await;
        })
    }))
}

fn print_table(rows: &[Row]) {
    let width =
        |f: fn(&Row) -> usize, title: &str| rows.iter().map(f).max().unwrap_or(0).max(title.len());
    let check = width(|r| r.check.len(), "check");
    let claimed = width(|r| r.claimed.len(), "claimed");
    let observed = width(|r| r.observed.len(), "observed");
    outln!(
        "{:check$}  {:claimed$}  {:observed$}  pass",
        "check",
        "claimed",
        "observed"
    );
    for r in rows {
        outln!(
            "{:check$}  {:claimed$}  {:observed$}  {}",
            r.check,
            r.claimed,
            r.observed,
            r.verdict.word()
        );
    }
}
