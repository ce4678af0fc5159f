//! `lockbench strategies` and `lockbench scenarios`: the registry's rows with their servers and
//! capabilities, and the presets with the suites of `compare` that run them.

use crate::base::duration::format_duration;
use crate::base::error::{BenchError, EXIT_OK};
use crate::base::stdout::outln;
use crate::commands::suite;
use crate::{scenarios, strategies};

pub(super) fn list_strategies(only_peers: bool) -> Result<i32, BenchError> {
    let settings = strategies::StrategySettings::new(std::time::Duration::from_secs(30));
    let width = strategies::every().map(|s| s.id.len()).max().unwrap_or(8);
    outln!(
        "{:width$}  {:10}  {:6}  description",
        "id",
        "server",
        "in all"
    );
    for s in strategies::every().filter(|s| !only_peers || s.is_peer()) {
        outln!(
            "{:width$}  {:10}  {:6}  {}",
            s.id,
            s.server.name(),
            if s.in_all { "yes" } else { "no" },
            s.description
        );
        if let Some(model) = s.counterpart {
            outln!("{:width$}  modelled by: {model}", "");
        }
        if let Some(registry) = s.peer_spec().and_then(|p| p.registry.as_ref()) {
            let other = format!("{}@<version>", s.id);
            outln!(
                "{:width$}  other versions: {other} ({})",
                "",
                registry.name()
            );
        }
        match s.capabilities(&settings) {
            Ok(c) => {
                // etcd's Mutex grants its own Session's second acquire at once, uncounted.
                let shared = s
                    .peer_spec()
                    .is_some_and(|p| p.reentry == lockers::peer::manifest::Reentry::Shared);
                let flags: Vec<&str> = [
                    (c.reentrant, "reentrant"),
                    (shared, "shared_reentry"),
                    (c.fencing, "fencing"),
                    (c.auto_renew, "auto_renew"),
                    (c.fixed_lease, "fixed_lease"),
                    (c.wait_notify, "wait_notify"),
                    (c.lost_signal, "lost_signal"),
                    (c.hold_identity, "hold_identity"),
                ]
                .into_iter()
                .filter_map(|(on, name)| on.then_some(name))
                .collect();
                outln!(
                    "{:width$}  capabilities: {}; min ttl {}, ttl granularity {}",
                    "",
                    flags.join(" "),
                    format_duration(c.min_ttl),
                    format_duration(c.ttl_granularity)
                );
            }
            Err(e) => outln!("{:width$}  capabilities: unavailable ({e})", ""),
        }
    }
    Ok(EXIT_OK)
}

/// `lockbench scenarios`: every preset with the suites of `compare` that run it (read from the
/// suite itself) and its description; then the many-locks pass, which only `compare` runs.
pub(super) fn list_scenarios() -> Result<i32, BenchError> {
    let mut rows: Vec<(&str, String, String)> = scenarios::PRESETS
        .iter()
        .map(|p| (p.name, suite_column(p.name), p.description()))
        .collect();
    rows.push((
        suite::MANY_LOCKS,
        suite_column(suite::MANY_LOCKS),
        "compare only: `lockbench scale` holding 10,000 locks with one client, 3 passes per strategy"
            .to_owned(),
    ));
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(8);
    let suites = rows.iter().map(|r| r.1.len()).max().unwrap_or(6);
    outln!("{:width$}  {:suites$}  description", "scenario", "suites");
    for (name, in_suites, description) in &rows {
        outln!("{name:width$}  {in_suites:suites$}  {description}");
    }
    outln!(
        "suites: `compare --quick`, `compare` (default), `compare --full`, `compare --thorough` (the \
         full suite at 10 trials); one in a suite also runs alone with `compare --scenarios NAME`; every \
         preset runs with `run -s NAME`, the only way for those by name only"
    );
    Ok(EXIT_OK)
}

/// The suites column of `lockbench scenarios`: `quick, default, full, thorough`, or `by name only`.
fn suite_column(scenario: &str) -> String {
    let names = suite::suites_running(scenario);
    if names.is_empty() {
        "by name only".to_owned()
    } else {
        names.join(", ")
    }
}
