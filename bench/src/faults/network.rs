//! Faults on the network between clients and server, spec and injection: through the clients' TCP
//! proxies, added delay (`proxy_delay`), a partition that drops every byte (`proxy_blackhole`) and
//! reset connections (`proxy_reset`), on one client (the holder, `client:N`) or all; and a partition
//! the server notices only by TCP keepalive (`keepalive_partition`): the client's proxy connections
//! to a server in a network namespace of its own (PostgreSQL's or MariaDB's: a kind offers one when
//! it starts such a server for a case, [`ServerFault::KeepalivePartition`]) are dropped silently
//! inside that namespace.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockbench_servers::{Fault, Proxy};

use super::env::{
    FaultEnv, Record, ServerAccess, Victim, blocking, check_struck_hold, describe_victim, hold_for,
    lasts_until, measure_any, measure_victim, pick_client, sleep_until,
};
use super::kind::{Aftermath, Needs, NetworkFault, Target, Targets};
use super::proxies::{self, ClientProxies, Directions, parse_directions};
use super::spec::{FaultFile, Profile, Setting, Spec, parsed, positive, timing};
use super::topology::Topology;
use crate::base::clock::duration_ns;
use crate::base::duration::Units;
use crate::base::time_scale::TimeScale;
use crate::kinds::ServerFault;

/// What the family says of `kind`.
pub(super) fn profile(kind: NetworkFault) -> Profile {
    let network = Profile {
        targets: Targets::Connections,
        proxies: true,
        ..Profile::PLAIN
    };
    match kind {
        NetworkFault::Delay => Profile {
            allowed: &["duration", "delay", "direction", "after_acquire"],
            required: &["duration", "delay"],
            aftermath: Aftermath::SlowsDown,
            ..network
        },
        NetworkFault::Blackhole => Profile {
            allowed: &["duration", "direction", "after_acquire"],
            required: &["duration"],
            ..network
        },
        NetworkFault::Reset => Profile {
            allowed: &["duration", "every", "after_acquire"],
            ..network
        },
        NetworkFault::KeepalivePartition => Profile {
            allowed: &["duration", "after_acquire"],
            required: &["duration"],
            needs: Needs::Offered(ServerFault::KeepalivePartition),
            ..network
        },
    }
}

/// A network fault's kind with the settings of its own: a proxy's added delay and the direction it
/// acts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetworkSpec {
    /// `proxy_delay`: `delay` added to the bytes of `direction`.
    Delay {
        /// Added latency.
        delay: Duration,
        /// Which way it acts.
        direction: Directions,
    },
    /// `proxy_blackhole`: the bytes of `direction` dropped.
    Blackhole {
        /// Which way it acts.
        direction: Directions,
    },
    /// `proxy_reset`.
    Reset,
    /// `keepalive_partition`.
    KeepalivePartition,
}

impl NetworkSpec {
    /// Reads and checks the settings of a network fault of `kind` as written, defaults filled in
    /// (both directions).
    pub(crate) fn read(kind: NetworkFault, file: &FaultFile, units: Units) -> Result<Self, String> {
        let direction = || {
            parsed("direction", &file.direction, parse_directions)
                .map(|d| d.unwrap_or(Directions::Both))
        };
        Ok(match kind {
            NetworkFault::Delay => NetworkSpec::Delay {
                delay: positive("delay", timing("delay", &file.delay, units)?)?.unwrap_or_default(),
                direction: direction()?,
            },
            NetworkFault::Blackhole => NetworkSpec::Blackhole {
                direction: direction()?,
            },
            NetworkFault::Reset => NetworkSpec::Reset,
            NetworkFault::KeepalivePartition => NetworkSpec::KeepalivePartition,
        })
    }

    /// Its settings, for the `--fault` text and the results.
    pub(crate) fn settings(&self) -> Vec<Setting> {
        let direction = |d: Directions| Setting::Word("direction", d.to_string());
        match *self {
            NetworkSpec::Delay {
                delay,
                direction: d,
            } => {
                vec![Setting::Timing("delay", delay), direction(d)]
            }
            NetworkSpec::Blackhole { direction: d } => vec![direction(d)],
            NetworkSpec::Reset | NetworkSpec::KeepalivePartition => Vec::new(),
        }
    }

    /// The same with its timings divided by `factor` (`--time-scale`).
    pub(crate) fn scaled(&self, factor: TimeScale) -> Self {
        match *self {
            NetworkSpec::Delay { delay, direction } => NetworkSpec::Delay {
                delay: delay / factor,
                direction,
            },
            other => other,
        }
    }

    /// The servers it starts for itself: a server in a network namespace of its own for a
    /// keepalive partition.
    pub(crate) fn topology(&self) -> Option<Topology> {
        (*self == NetworkSpec::KeepalivePartition).then_some(Topology::SqlNamespace)
    }
}

/// A network fault as its family sees it.
type NetworkFaultSpec<'a> = Spec<&'a NetworkSpec>;

/// Applies a network fault, lifts it, and measures what followed.
pub(super) async fn inject(spec: &NetworkFaultSpec<'_>, env: &FaultEnv, rec: &mut Record) {
    let Some(all) = env.proxies.clone() else {
        rec.not_applied("the case has no proxies");
        return;
    };
    let victim = match spec.target {
        Target::All => None,
        target => match pick_client(env, target, rec.start).await {
            Some(v) => Some(v),
            None => {
                rec.not_applied("no client acquired a lock before the case ended");
                return;
            }
        },
    };
    let chosen = choose_proxies(&all, victim.as_ref(), rec);
    if let (
        Some(after),
        Some(Victim {
            held: Some((_, acquired)),
            ..
        }),
    ) = (spec.after_acquire, &victim)
    {
        // Aimed at a moment of the hold (a renewal): if the hold ended meanwhile, the fault struck
        // no hold and is not applied (checked once it is over).
        if !sleep_until(env, acquired + duration_ns(after)).await {
            rec.not_applied("the case ended before after_acquire");
            return;
        }
    }
    let cursor = env.board.cursor();
    let t0 = env.clock.now();
    rec.start = t0;
    match *spec.family {
        NetworkSpec::Delay { delay, direction } => {
            degrade(spec, env, rec, &chosen, (Some(delay), direction)).await;
        }
        NetworkSpec::Blackhole { direction } => {
            degrade(spec, env, rec, &chosen, (None, direction)).await;
        }
        NetworkSpec::Reset => reset(spec, env, rec, &chosen, t0).await,
        NetworkSpec::KeepalivePartition => keepalive_partition(spec, env, rec, &chosen).await,
    }
    match victim {
        Some(v) => {
            measure_victim(env, v, cursor, t0, rec).await;
            check_struck_hold(env, spec.target, &v, t0, rec).await;
        }
        None if rec.aftermath.measures_recovery() => measure_any(env, cursor, t0, rec).await,
        None => {}
    }
}

/// The proxies of `victim`'s client, or every client's; named as the fault's target.
fn choose_proxies<'a>(
    all: &'a ClientProxies,
    victim: Option<&Victim>,
    rec: &mut Record,
) -> Vec<&'a Proxy> {
    match victim {
        Some(v) => {
            rec.target = describe_victim(v);
            rec.param("client", v.client);
            if let Some((key, _)) = v.held {
                rec.param("key", key);
            }
            all.of(v.client).iter().collect()
        }
        None => {
            rec.target = "all clients".into();
            all.all().collect()
        }
    }
}

/// Delays by `delay` (`proxy_delay`) or, without one, drops (`proxy_blackhole`) the traffic of
/// `direction` through `chosen` for the fault's length, counting the bytes it affected; a blackhole
/// then resets the streams it left unusable.
async fn degrade(
    spec: &NetworkFaultSpec<'_>,
    env: &FaultEnv,
    rec: &mut Record,
    chosen: &[&Proxy],
    (delay, direction): (Option<Duration>, Directions),
) {
    let fault = match delay {
        Some(delay) => Fault::Delay(delay),
        None => Fault::Blackhole,
    };
    let delay = delay.is_some();
    let affected = |chosen: &[&Proxy]| -> u64 {
        chosen
            .iter()
            .map(|p| {
                if delay {
                    p.delayed_bytes()
                } else {
                    p.blackholed_bytes()
                }
            })
            .sum()
    };
    let before = affected(chosen);
    for p in chosen {
        proxies::set(p, direction, fault);
    }
    hold_for(env, spec.duration, rec).await;
    let bytes = affected(chosen) - before;
    let verb = if delay { "delayed" } else { "blackholed" };
    rec.param(&format!("{verb}_bytes"), bytes);
    rec.evidence(if bytes > 0 {
        Ok(format!("the proxy {verb} {bytes} bytes"))
    } else {
        Err(format!(
            "the proxy {verb} no bytes (no traffic while the fault was on)"
        ))
    });
    for p in chosen {
        proxies::set(p, direction, Fault::Pass);
        if !delay {
            // The bytes dropped meanwhile left these streams unusable: end them, as a
            // partition that outlasts the peers' timeouts does.
            p.reset_all();
        }
    }
    rec.stop = Some(env.clock.now());
}

/// Drops the packets of `chosen`'s connections to the server silently, both ways, inside the
/// server's network namespace for the fault's length, watching (every 50 ms, on one session kept
/// open) for the server to end their sessions; then lifts the rules and resets the proxies' streams (left unusable). Evidence:
/// the rules' packet counters, the sessions the server ended and its "timed out" log lines.
async fn keepalive_partition(
    spec: &NetworkFaultSpec<'_>,
    env: &FaultEnv,
    rec: &mut Record,
    chosen: &[&Proxy],
) {
    let ServerAccess::Own(own) = &env.server else {
        rec.not_applied("keepalive_partition needs the case's own namespaced server");
        return;
    };
    let ports: Vec<u16> = chosen.iter().flat_map(|p| p.upstream_ports()).collect();
    if ports.is_empty() {
        rec.not_applied("the target had no connection to the server");
        return;
    }
    rec.param("connections", ports.len() as u64);
    if let Some(limit) = own.keepalive_limit() {
        rec.param("keepalive_limit_ms", limit.as_secs_f64() * 1e3);
    }
    let (own_c, ports_c) = (own.clone(), ports.clone());
    let watching = blocking(move || {
        let mut watch = own_c.watch_sessions(&ports_c)?;
        let before = watch.read()?;
        let line = watch.timed_out_line();
        Ok((Arc::new(Mutex::new(watch)), (before, line)))
    })
    .await;
    let (watch, (before, timed_out_line)) = match watching {
        Ok(w) => w,
        Err(e) => return rec.not_applied(e),
    };
    let (own_c, ports_c) = (own.clone(), ports.clone());
    let partition = match blocking(move || own_c.partition(&ports_c)).await {
        Ok(p) => p,
        Err(e) => return rec.not_applied(e),
    };
    let t0 = rec.start;
    let end = env.clock.now() + spec.duration.map(duration_ns).unwrap_or(0);
    let mut ended_at = None;
    let mut after;
    loop {
        let watch_c = watch.clone();
        after = blocking(move || {
            let mut watch = watch_c.lock().unwrap_or_else(|e| e.into_inner());
            watch.read()
        })
        .await;
        if ended_at.is_none() && matches!(after, Ok((0, _))) {
            ended_at = Some(env.clock.now());
        }
        let next = (env.clock.now() + 50_000_000).min(end);
        if next >= end {
            lasts_until(env, t0, end, rec).await;
            break;
        }
        if !sleep_until(env, next).await {
            rec.cut_short(super::env::cut_short_words(env.clock.now(), t0, end));
            break;
        }
    }
    let dropped = blocking(move || partition.lift().map_err(|e| e.to_string())).await;
    for p in chosen {
        // The dropped bytes left these streams unusable: end them, as the peers' timeouts would.
        p.reset_all();
    }
    rec.stop = Some(env.clock.now());
    if let Some(at) = ended_at {
        rec.param("sessions_ended_ms", at.saturating_sub(t0) as f64 / 1e6);
    }
    let dropped = match dropped {
        Ok(n) => n,
        Err(e) => return rec.not_applied(format!("reading the rules' counters: {e}")),
    };
    rec.param("dropped_packets", dropped);
    let (live_before, _) = before;
    let (live_after, timed_out) = after.unwrap_or((live_before, 0));
    rec.param("sessions_before", live_before);
    rec.param("sessions_ended", live_before.saturating_sub(live_after));
    rec.param("timed_out_log_lines", timed_out as u64);
    rec.evidence(if dropped > 0 {
        Ok(format!(
            "nft dropped {dropped} packets of {} connections; the server ended {} of their {live_before} sessions{} ({timed_out} × \"{timed_out_line}\" in its log)",
            ports.len(),
            live_before.saturating_sub(live_after),
            ended_at
                .map(|at| format!(" {:.0} ms after the partition began", at.saturating_sub(t0) as f64 / 1e6))
                .unwrap_or_default(),
        ))
    } else {
        Err("nft dropped no packets (no traffic while the fault was on)".to_owned())
    });
}

/// Resets every connection through `chosen`, once or `every` so often for the fault's length.
async fn reset(
    spec: &NetworkFaultSpec<'_>,
    env: &FaultEnv,
    rec: &mut Record,
    chosen: &[&Proxy],
    t0: u64,
) {
    let mut resets = 0u64;
    let mut connections = 0usize;
    let end = spec.duration.map(|d| t0 + duration_ns(d));
    loop {
        for p in chosen {
            connections += p.reset_all();
        }
        resets += 1;
        let (Some(every), Some(end)) = (spec.every, end) else {
            break;
        };
        let next = env.clock.now() + duration_ns(every);
        if next >= end || !sleep_until(env, next).await {
            break;
        }
    }
    if let Some(end) = end {
        lasts_until(env, t0, end, rec).await;
    }
    rec.param("resets", resets);
    rec.param("connections_reset", connections as u64);
    rec.evidence(if connections > 0 {
        Ok(format!("the proxy reset {connections} connections"))
    } else {
        Err("the proxy had no connection to reset".to_owned())
    });
    rec.stop = end.map(|e| e.min(env.clock.now()));
}
