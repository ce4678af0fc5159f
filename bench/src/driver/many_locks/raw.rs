//! The yardstick of batched renewal: a raw sender that makes the calls `redis-watchdog-batched` makes at
//! a step, with no `lockers` code between. The same script text ([`batch_renewal_script`]), the same
//! locks per call, the same schedule ([`BATCHED_SCHEDULE`]: a twelfth of a period per tick, every lock
//! renewed every eleventh tick, the chunks spread evenly over the eleven phases, at most 16 calls in
//! flight), the same TTL, on the same kind of
//! connection (redis-rs's multiplexed `ConnectionManager`, with the timeouts `lockers` gives it).
//!
//! It runs where a strategy runs (its own child process, measured by the same window with the same client
//! CPU, server and margin readings), so `batched ÷ raw` is what the strategy's own code costs on this
//! machine at this moment, whatever else shares the cores. Its locks are hashes with one owner field
//! and a TTL, as the watchdog's are, created by pipelined `HSET` + `PEXPIRE` and deleted at the end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use lockbench_reports::scale::{ScaleSeries, ScaleStop};
use lockers::redis::connection::{ConnectionSettings, open_client};
use lockers::redis::watchdog::{BATCHED_SCHEDULE, batch_renewal_script};
use redis::aio::ConnectionManager;

use super::hold::{Window, interrupted, unless_interrupted};
use super::probes::{ClientProcess, ServerProbe};
use super::renewal_counts::RenewalCounts;
use super::spec::ScaleSpec;
use crate::backends::Backends;
use crate::base::stop::StopSignal;
use crate::strategies::Strategy;

/// The raw sender's series name.
pub const RAW_SENDER: &str = "raw-batch-sender";

/// Keys created or deleted per pipeline.
const SETUP_BATCH: usize = 1000;

/// The owner field of every raw lock: as long as a watchdog owner (`<client id>:<owner>`).
const OWNER: &str = "raw-sender-00000000000000000000000:0000000000000000";

/// Runs `spec.steps` with the raw sender beside `strategy` (the batched watchdog), in this process: its
/// locks per call and renewals per period are the strategy's. `interrupt` stops it as it stops a
/// strategy ([`super::hold::measure_strategy`]).
pub(crate) async fn measure(
    strategy: &Strategy,
    spec: &ScaleSpec,
    backends: &Backends,
    server: Option<ServerProbe>,
    interrupt: &StopSignal,
) -> ScaleSeries {
    let chunk = strategy.facts.locks_per_renew_call.unwrap_or(1);
    let mut series = ScaleSeries {
        strategy: RAW_SENDER.to_owned(),
        server: "redis".to_owned(),
        locks_per_renew_call: Some(chunk),
        ..ScaleSeries::default()
    };
    let stop = |series: &mut ScaleSeries, held: usize, step: u64, reason: String| {
        series.stopped = Some(ScaleStop {
            held: held as u64,
            step,
            reason,
        });
    };
    let connection = match connect(backends).await {
        Ok(connection) => connection,
        Err(reason) => {
            stop(&mut series, 0, spec.steps[0], reason);
            return series;
        }
    };
    series.client_rss_at_start_bytes = ClientProcess::Own.sample().map(|s| s.rss_bytes);
    let last = spec.steps.last().copied().unwrap_or(0);
    let locks = Arc::new(RawLocks::new(usize::try_from(last).unwrap_or(usize::MAX)));
    let counts = Arc::new(RenewalCounts::default());
    let sender = tokio::spawn(send_rounds(
        connection.clone(),
        locks.clone(),
        counts.clone(),
        usize::try_from(chunk).unwrap_or(1).max(1),
        spec.watchdog_timeout,
        spec.renew_period(),
    ));
    for &step in &spec.steps {
        let at_start = counts.now();
        let began = Instant::now();
        let target = usize::try_from(step).unwrap_or(usize::MAX);
        let filled = unless_interrupted(
            interrupt,
            locks.fill(&connection, target, spec.watchdog_timeout),
        );
        let Some(filled) = filled.await else {
            series.stopped = Some(interrupted(locks.held(), step));
            break;
        };
        if let Err(e) = filled {
            stop(
                &mut series,
                locks.held(),
                step,
                format!("setting up locks failed: {e}"),
            );
            break;
        }
        let fill_time = began.elapsed();
        let window = Window {
            held_locks: locks.held() as u64,
            spec,
            server: server.clone(),
            counts: &counts,
            at_start,
            fill_time,
            locks_per_call: series.locks_per_renew_call,
            renewals_per_period: strategy.facts.renewals_per_period,
            renewal_command: strategy.facts.renewal_command,
            client: ClientProcess::Own,
            // The database is emptied before each row.
            server_before: None,
        };
        let measured = unless_interrupted(interrupt, async {
            tokio::time::sleep(spec.renew_period().max(Duration::from_millis(500))).await;
            window.measure(|| locks.still_held() as u64).await
        });
        let Some(point) = measured.await else {
            series.stopped = Some(interrupted(locks.held(), step));
            break;
        };
        series.points.push(point);
    }
    sender.abort();
    let _ = sender.await;
    locks.delete(&connection).await;
    series
}

/// A connection like the one every `lockers` Redis client opens (the same client settings and
/// timeouts), proven by a `SCRIPT LOAD` of the batch renewal script; with the script's SHA1.
async fn connect(backends: &Backends) -> Result<(ConnectionManager, String), String> {
    let url = backends
        .endpoints()
        .redis
        .ok_or_else(|| "no redis server in this run".to_owned())?;
    let client = open_client(&url).map_err(|e| e.to_string())?;
    let settings = ConnectionSettings::default();
    let config = settings.manager_config();
    let connect = ConnectionManager::new_with_config(client, config);
    let mut manager = tokio::time::timeout(settings.connect_timeout, connect)
        .await
        .map_err(|_| "the raw sender could not connect within the connect timeout".to_owned())?
        .map_err(|e| format!("the raw sender could not connect: {e}"))?;
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(batch_renewal_script())
        .query_async(&mut manager)
        .await
        .map_err(|e| format!("SCRIPT LOAD failed: {e}"))?;
    Ok((manager, sha))
}

/// The raw sender's locks: keys made once, the first `held` of them live on the server.
struct RawLocks {
    keys: Vec<String>,
    held: AtomicUsize,
    /// Per key, whether a renewal found it gone.
    lost: Vec<AtomicBool>,
}

impl RawLocks {
    fn new(most: usize) -> Self {
        RawLocks {
            keys: (0..most)
                .map(|i| format!("lockbench:{{scale-raw:{i}}}"))
                .collect(),
            held: AtomicUsize::new(0),
            lost: (0..most).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    fn still_held(&self) -> usize {
        let held = self.held();
        held - self.lost[..held]
            .iter()
            .filter(|l| l.load(Ordering::Relaxed))
            .count()
    }

    /// Creates locks until `target` are live, each a hash with the owner field and a `ttl` TTL.
    async fn fill(
        &self,
        connection: &(ConnectionManager, String),
        target: usize,
        ttl: Duration,
    ) -> redis::RedisResult<()> {
        let mut manager = connection.0.clone();
        let ttl_ms = ttl_ms(ttl);
        let target = target.min(self.keys.len());
        while self.held() < target {
            let from = self.held();
            let to = (from + SETUP_BATCH).min(target);
            let mut pipe = redis::pipe();
            for key in &self.keys[from..to] {
                pipe.cmd("HSET").arg(key).arg(OWNER).arg(1).ignore();
                pipe.cmd("PEXPIRE").arg(key).arg(ttl_ms).ignore();
            }
            pipe.query_async::<()>(&mut manager).await?;
            self.held.store(to, Ordering::Release);
        }
        Ok(())
    }

    /// Deletes every live lock (errors only leave them to expire).
    async fn delete(&self, connection: &(ConnectionManager, String)) {
        let mut manager = connection.0.clone();
        for keys in self.keys[..self.held()].chunks(SETUP_BATCH) {
            let _ = redis::cmd("UNLINK")
                .arg(keys)
                .query_async::<()>(&mut manager)
                .await;
        }
    }
}

/// Whole milliseconds, rounded up, at least 1 (as the strategies send TTLs).
fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_nanos().div_ceil(1_000_000).max(1)).unwrap_or(u64::MAX)
}

/// Sends the renewal rounds until aborted: at every tick that is a multiple of `renew_every_ticks`,
/// every chunk of `chunk_len` live locks, at most `chunks_in_flight` calls at a time; each answer
/// counted as the strategy's events would be.
async fn send_rounds(
    connection: (ConnectionManager, String),
    locks: Arc<RawLocks>,
    counts: Arc<RenewalCounts>,
    chunk_len: usize,
    ttl: Duration,
    period: Duration,
) {
    let (manager, sha) = connection;
    let schedule = BATCHED_SCHEDULE;
    let ticks = u32::try_from(schedule.ticks_per_period).unwrap_or(1).max(1);
    let tick = (period / ticks).max(Duration::from_micros(100));
    let phases = usize::try_from(schedule.renew_every_ticks)
        .unwrap_or(1)
        .max(1);
    let ttl_ms = ttl_ms(ttl);
    let origin = Instant::now();
    for n in 1u32.. {
        tokio::time::sleep_until((origin + tick * n).into()).await;
        let live = locks.held();
        let mut due = (n as usize % phases..live.div_ceil(chunk_len)).step_by(phases);
        let mut calls = FuturesUnordered::new();
        loop {
            while calls.len() < schedule.chunks_in_flight
                && let Some(chunk) = due.next()
            {
                let range = chunk * chunk_len..((chunk + 1) * chunk_len).min(live);
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(&sha).arg(range.len());
                for key in &locks.keys[range.clone()] {
                    cmd.arg(key.as_bytes());
                }
                cmd.arg(ttl_ms);
                for _ in range.clone() {
                    cmd.arg(OWNER);
                }
                let mut manager = manager.clone();
                calls.push(async move {
                    let answers: redis::RedisResult<Vec<i64>> = cmd.query_async(&mut manager).await;
                    (range, answers)
                });
            }
            let Some((range, answers)) = calls.next().await else {
                break;
            };
            match answers {
                Ok(answers) if answers.len() == range.len() => {
                    for (i, answer) in range.zip(answers) {
                        match answer {
                            0 => {
                                if !locks.lost[i].swap(true, Ordering::Relaxed) {
                                    counts.lost();
                                }
                            }
                            left if left > 0 => counts.renewed(Some(Duration::from_millis(
                                u64::try_from(left).unwrap_or(u64::MAX),
                            ))),
                            _ => counts.renewed(None),
                        }
                    }
                }
                _ => range.for_each(|_| counts.failed()),
            }
        }
    }
}
