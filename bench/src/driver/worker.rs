//! One client's load loop: acquire a random key, run the critical section against the protected
//! resource (read, work for the task duration, write +1 with the lease's token), release; record what
//! happened. The same code runs as a tokio task or inside a worker process; strategies are reached only
//! through `dyn Locker`.
//!
//! Hot path: no allocation per cycle beyond what the strategy does, a handful of clock reads, three
//! histogram records into worker-owned histograms, one interval pushed to a batch that is handed to the
//! oracle every 256 intervals or 100 ms.

use std::sync::Arc;
use std::time::Duration;

use lockers::{AcquireOptions, Lease, LockError, Locker};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::histogram::record;
use super::resource::WriteVerdict;
use super::resource_socket::ResourceClient;
use super::tally::WorkerTally;
use crate::base::clock::{MonoClock, duration_ns};
use crate::base::holds::{BatchQueue, EndedBy, HistoryKind, HistoryOp, Interval, IntervalBatch};
use crate::base::holds::{HoldChange, HoldEvent, HoldSink};
use crate::base::stop::StopSignal;
use crate::strategies::StrategySettings;
use crate::workload::{LeaseSpec, OnLost, TaskDistribution, Workload};

const BATCH: usize = 256;
const FLUSH_NS: u64 = 100_000_000;
const BACKOFF: Duration = Duration::from_millis(10);

/// What every worker of a case does; shipped to worker processes as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CasePlan {
    /// Strategy id.
    pub strategy: String,
    /// Lease mode.
    pub lease: LeaseSpec,
    /// Watchdog TTL, ns.
    pub watchdog_timeout_ns: u64,
    /// Task distribution, scenario syntax.
    pub task: String,
    /// Acquire wait, ns (0 = try once).
    pub acquire_wait_ns: u64,
    /// Think time, ns.
    pub think_ns: u64,
    /// Open-loop rate per client.
    pub rate: Option<f64>,
    /// Reaction to `lost()`.
    pub on_lost: OnLost,
    /// Prefix of every key name of the case.
    pub key_prefix: String,
    /// Number of keys.
    pub keys: u32,
    /// Seed (each client derives its own).
    pub seed: u64,
    /// Client 0's first task ending this long (ns) after the case start is orphaned.
    #[serde(default)]
    pub orphan_after_ns: Option<u64>,
    /// Record the history of every operation (a remote worker's clock is its own: its history is
    /// taken from the resource instead).
    #[serde(default)]
    pub history: bool,
}

impl CasePlan {
    /// The plan for `strategy` under `lease` in `workload`; keys are named `<key_prefix><index>`.
    pub(crate) fn new(
        workload: &Workload,
        strategy: &str,
        lease: LeaseSpec,
        key_prefix: String,
    ) -> Self {
        CasePlan {
            strategy: strategy.to_owned(),
            lease,
            watchdog_timeout_ns: duration_ns(workload.watchdog_timeout),
            task: workload.task.to_string(),
            acquire_wait_ns: duration_ns(workload.acquire_wait),
            think_ns: duration_ns(workload.think),
            rate: workload.rate,
            on_lost: workload.on_lost,
            key_prefix,
            keys: workload.keys,
            seed: workload.seed,
            orphan_after_ns: workload.orphan_after.map(duration_ns),
            history: workload.history && workload.workers != crate::workload::WorkerMode::Remote,
        }
    }

    /// The strategy settings it implies.
    pub(crate) fn settings(&self) -> StrategySettings {
        StrategySettings::new(Duration::from_nanos(self.watchdog_timeout_ns))
    }
}

/// A plan made ready to run: key names built, distribution parsed, options fixed.
#[derive(Debug)]
pub(crate) struct ReadyPlan {
    keys: Vec<Arc<str>>,
    task: TaskDistribution,
    options: AcquireOptions,
    think: Duration,
    rate_period_ns: Option<u64>,
    on_lost: OnLost,
    seed: u64,
    orphan_after_ns: Option<u64>,
    history: bool,
}

impl ReadyPlan {
    /// Prepares `plan`; the error is one line.
    pub(crate) fn new(plan: &CasePlan) -> Result<Self, String> {
        let task = TaskDistribution::parse(&plan.task)?;
        let wait = Duration::from_nanos(plan.acquire_wait_ns);
        let options = AcquireOptions {
            wait: (!wait.is_zero()).then_some(wait),
            lease: plan.lease.mode(),
            owner: None,
        };
        Ok(ReadyPlan {
            keys: (0..plan.keys)
                .map(|k| Arc::from(format!("{}{k}", plan.key_prefix)))
                .collect(),
            task,
            options,
            think: Duration::from_nanos(plan.think_ns),
            rate_period_ns: plan.rate.map(|r| (1e9 / r).max(1.0) as u64),
            on_lost: plan.on_lost,
            seed: plan.seed,
            orphan_after_ns: plan.orphan_after_ns,
            history: plan.history,
        })
    }
}

/// Everything one worker needs.
#[derive(Debug)]
pub(crate) struct Worker {
    /// Client index.
    pub client: u32,
    /// The client's strategy instance.
    pub locker: Arc<dyn Locker>,
    /// Whether to send fencing tokens to the resource.
    pub fencing: bool,
    /// Whether the strategy signals a lost lease (`Capabilities::lost_signal`). Without it the holder
    /// works on as `OnLost::Ignore` whatever the plan says: the library tells its user nothing (a
    /// Redisson task runs to its end), and the `lost()` such a row resolves at the local deadline is
    /// lockbench's addition, which must not save it.
    pub lost_signal: bool,
    /// The case's plan.
    pub plan: Arc<ReadyPlan>,
    /// The protected resource.
    pub resource: ResourceClient,
    /// Where interval batches go (the oracle).
    pub intervals: BatchQueue,
    /// Ends the loop.
    pub stop: StopSignal,
    /// The shared clock.
    pub clock: MonoClock,
    /// When the case started (ns).
    pub go: u64,
    /// When measuring starts (ns).
    pub measure_from: u64,
    /// Where to report acquires and ends of holds (cases with faults only).
    pub holds: Option<HoldSink>,
}

enum Outcome {
    Done,
    Lost(u64),
    Stopped,
}

/// A worker loop's state from one cycle to the next.
struct LoopState {
    tally: WorkerTally,
    rng: SmallRng,
    batch: Vec<Interval>,
    /// The operations behind `batch` (cases that record their history).
    history: Vec<HistoryOp>,
    last_flush: u64,
    next_slot: u64,
    lease_seq: u64,
    first: bool,
    cycle_top: u64,
    /// Client 0's task that ends at or after this is orphaned.
    orphan_at: Option<u64>,
    on_lost: OnLost,
}

/// When a cycle may start: its intended start (open loop) and whether it waited for it.
struct Turn {
    intended: Option<u64>,
    waited: bool,
}

/// One cycle's key and times.
struct Cycle {
    key: u32,
    /// Acquire started (ns).
    t0: u64,
    /// Acquired (ns).
    t1: u64,
    /// Whether the cycle started in the measured window.
    measured: bool,
    /// Time spent waiting, thinking, working or backing off: not the driver's.
    idle_ns: u64,
    release_ns: u64,
}

async fn pause(d: Duration, stop: &StopSignal) -> bool {
    tokio::select! {
        biased;
        _ = stop.wait() => false,
        _ = tokio::time::sleep(d) => true,
    }
}

fn count(map: &mut std::collections::BTreeMap<String, u64>, error: &LockError) {
    *map.entry(error.kind().to_owned()).or_default() += 1;
}

impl Worker {
    /// Runs until the stop signal; returns what it measured. The last interval batch carries the low
    /// bound `u64::MAX`.
    pub(crate) async fn run(mut self) -> WorkerTally {
        let mut state = self.loop_state();
        while !self.stop.is_set() {
            let Some(turn) = self.await_turn(&mut state).await else {
                break;
            };
            let t0 = self.clock.now();
            // Time spent waiting for the schedule or thinking is not the driver's.
            let idle_ns = if turn.waited { t0 - state.cycle_top } else { 0 };
            let measured = t0 >= self.measure_from;
            let key = if self.plan.keys.len() == 1 {
                0
            } else {
                state.rng.random_range(0..self.plan.keys.len())
            };
            let acquired = tokio::select! {
                biased;
                r = self.locker.acquire(&self.plan.keys[key], &self.plan.options) => Some(r),
                _ = self.stop.wait() => None,
            };
            let t1 = self.clock.now();
            let mut cycle = Cycle {
                key: key as u32,
                t0,
                t1,
                measured,
                idle_ns,
                release_ns: 0,
            };
            match acquired {
                None => {
                    state.tally.cut_acquires.push((key as u32, t0, t1));
                    break;
                }
                Some(Err(LockError::Config(why))) => {
                    // The strategy refuses these settings (a peer library's own check): every
                    // further acquire would too, so the client stops and the case fails with why.
                    state.tally.config_error.get_or_insert(why);
                    break;
                }
                Some(Err(error)) => {
                    if measured {
                        count(&mut state.tally.acquire_errors, &error);
                    }
                    // An acquire that got no lock wanted the key all the same: the oracle's record
                    // says whether another client held it meanwhile (a server frozen under waiters
                    // answers them with errors, not grants).
                    state.tally.cut_acquires.push((key as u32, t0, t1));
                    if !matches!(error, LockError::Timeout { .. }) {
                        // A failing server must not turn the loop into a busy spin.
                        let before = self.clock.now();
                        pause(BACKOFF, &self.stop).await;
                        cycle.idle_ns += self.clock.now() - before;
                    }
                }
                Some(Ok(lease)) => {
                    if !self
                        .hold(&mut state, &mut cycle, lease, turn.intended)
                        .await
                    {
                        break;
                    }
                }
            }
            self.end_cycle(&mut state, &cycle);
        }
        self.flush(&mut state, u64::MAX);
        state.tally
    }

    fn loop_state(&self) -> LoopState {
        let seed = self.plan.seed ^ u64::from(self.client).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        LoopState {
            tally: WorkerTally::default(),
            rng: SmallRng::seed_from_u64(seed),
            batch: Vec::with_capacity(BATCH),
            history: Vec::new(),
            last_flush: self.go,
            next_slot: self.go,
            lease_seq: 0,
            first: true,
            cycle_top: self.clock.now(),
            orphan_at: self
                .plan
                .orphan_after_ns
                .filter(|_| self.client == 0)
                .map(|after| self.go + after),
            on_lost: if self.lost_signal {
                self.plan.on_lost
            } else {
                OnLost::Ignore
            },
        }
    }

    /// Waits for the cycle's slot (open loop) or thinks (closed loop, after the first cycle); none
    /// when the stop signal came first.
    async fn await_turn(&mut self, state: &mut LoopState) -> Option<Turn> {
        let mut intended = None;
        let mut wait = None;
        if let Some(period) = self.plan.rate_period_ns {
            let slot = state.next_slot;
            state.next_slot += period;
            intended = Some(slot);
            let now = self.clock.now();
            if slot > now {
                wait = Some(Duration::from_nanos(slot - now));
            }
        } else if !state.first && !self.plan.think.is_zero() {
            wait = Some(self.plan.think);
        }
        state.first = false;
        if let Some(wait) = wait
            && !pause(wait, &self.stop).await
        {
            return None;
        }
        Some(Turn {
            intended,
            waited: wait.is_some(),
        })
    }

    /// Works under `lease` and ends the hold; false when the task was orphaned (the client does no
    /// more).
    async fn hold(
        &mut self,
        state: &mut LoopState,
        cycle: &mut Cycle,
        lease: Lease,
        intended: Option<u64>,
    ) -> bool {
        self.report_hold(cycle.key, cycle.t1, HoldChange::Acquired);
        state.lease_seq += 1;
        let lease_id = (u64::from(self.client) << 40) | state.lease_seq;
        if cycle.measured {
            state.tally.acquired += 1;
            record(
                &mut state.tally.acquire,
                cycle.t1 - intended.unwrap_or(cycle.t0),
            );
        }
        let token = self.fencing.then(|| lease.token().0);
        self.record(
            state,
            HistoryOp {
                token,
                ..HistoryOp::lock(
                    self.client,
                    cycle.key,
                    HistoryKind::Acquire,
                    cycle.t0,
                    cycle.t1,
                )
            },
        );
        let task = self.plan.task.sample(&mut state.rng);
        let outcome = self
            .critical_section(state, cycle, &lease, task, token, lease_id)
            .await;
        let t3 = self.clock.now();
        if matches!(outcome, Outcome::Done) && state.orphan_at.is_some_and(|at| t3 >= at) {
            self.orphan(state, cycle, lease, t3).await;
            return false;
        }
        self.end_hold(state, cycle, lease, outcome, t3).await;
        true
    }

    /// Announces the hold to the resource, reads, works for `task` and writes the value read +1 with
    /// the lease's token.
    async fn critical_section(
        &mut self,
        state: &mut LoopState,
        cycle: &mut Cycle,
        lease: &Lease,
        task: Duration,
        token: Option<u64>,
        lease_id: u64,
    ) -> Outcome {
        // Before anything under the lock: a SIGKILL from here on leaves the hold on the resource's
        // record.
        let announced = self
            .resource
            .hold_began(self.client, cycle.key, cycle.t0, cycle.t1)
            .await;
        // The history's clock reads are taken only when the case records one.
        let read_at = self.plan.history.then(|| self.clock.now());
        let read = match announced {
            Ok(()) => self.resource.read(cycle.key, token, cycle.t1).await,
            Err(e) => Err(e),
        };
        if let (Ok(value), Some(read_at)) = (&read, read_at) {
            self.record(
                state,
                HistoryOp {
                    value: Some(*value),
                    ..HistoryOp::lock(
                        self.client,
                        cycle.key,
                        HistoryKind::Read,
                        read_at,
                        self.clock.now(),
                    )
                },
            );
        }
        let Ok(value) = read else {
            state.tally.resource_errors += 1;
            self.stop.set();
            return Outcome::Stopped;
        };
        let mut outcome = Outcome::Done;
        if !task.is_zero() {
            let work_start = self.clock.now();
            outcome = self.work(lease, task, state.on_lost).await;
            cycle.idle_ns += self.clock.now() - work_start;
        }
        if matches!(outcome, Outcome::Done) && state.on_lost == OnLost::Abort && !lease.is_held() {
            outcome = Outcome::Lost(self.clock.now());
        }
        if matches!(outcome, Outcome::Done) {
            let write_at = self.plan.history.then(|| self.clock.now());
            let written = self
                .resource
                .write(cycle.key, value + 1, token, lease_id)
                .await;
            if let (Ok(verdict), Some(write_at)) = (&written, write_at) {
                self.record(
                    state,
                    HistoryOp {
                        token,
                        value: Some(value + 1),
                        accepted: Some(*verdict == WriteVerdict::Accepted),
                        ..HistoryOp::lock(
                            self.client,
                            cycle.key,
                            HistoryKind::Write,
                            write_at,
                            self.clock.now(),
                        )
                    },
                );
            }
            match written {
                Ok(WriteVerdict::Accepted) => {
                    let at = self.clock.now();
                    if at >= self.measure_from {
                        state.tally.completed += 1;
                        let second = (at - self.measure_from) / 1_000_000_000;
                        state.tally.count_completion(second as usize);
                    }
                }
                Ok(WriteVerdict::Rejected) => {
                    if cycle.measured {
                        state.tally.rejected_writes += 1;
                    }
                }
                Err(_) => {
                    state.tally.resource_errors += 1;
                    self.stop.set();
                }
            }
        }
        outcome
    }

    /// The task's work: `task` long, ended early by the stop signal or, when the plan aborts on loss,
    /// by the lease's loss.
    async fn work(&mut self, lease: &Lease, task: Duration, on_lost: OnLost) -> Outcome {
        match on_lost {
            OnLost::Abort => {
                let lost = lease.lost();
                tokio::select! {
                    biased;
                    _ = self.stop.wait() => Outcome::Stopped,
                    _ = lost => Outcome::Lost(self.clock.now()),
                    _ = tokio::time::sleep(task) => Outcome::Done,
                }
            }
            OnLost::Ignore => tokio::select! {
                biased;
                _ = self.stop.wait() => Outcome::Stopped,
                _ = tokio::time::sleep(task) => Outcome::Done,
            },
        }
    }

    /// The task's thread dies here: the lease is neither released nor dropped (it stays referenced
    /// until the case ends), and this client does no more. The hold ends at the task's end, where the
    /// worker's own report ends it; the resource is told so too, as for every other end of a hold
    /// (remote workers' holds are judged from the resource's record, which would otherwise keep the
    /// orphan's hold open until the case stopped).
    async fn orphan(&mut self, state: &mut LoopState, cycle: &Cycle, lease: Lease, t3: u64) {
        self.report_hold(cycle.key, t3, HoldChange::Ended(EndedBy::Orphaned));
        if self
            .resource
            .hold_ended(self.client, cycle.key, t3, EndedBy::Orphaned)
            .await
            .is_err()
        {
            state.tally.resource_errors += 1;
        }
        if cycle.measured {
            record(&mut state.tally.hold, t3.saturating_sub(cycle.t1));
        }
        state.batch.push(Interval {
            key: cycle.key,
            acquire_started: cycle.t0,
            start: cycle.t1,
            end: t3,
            ended_by: EndedBy::Orphaned,
        });
        self.record(
            state,
            HistoryOp::lock(self.client, cycle.key, HistoryKind::Release, t3, t3),
        );
        self.flush(state, u64::MAX);
        self.stop.wait().await;
        drop(lease);
    }

    /// Ends the hold at `t3` as `outcome` says: reports it, tells the resource, releases the lease and
    /// records the interval.
    async fn end_hold(
        &mut self,
        state: &mut LoopState,
        cycle: &mut Cycle,
        lease: Lease,
        outcome: Outcome,
        t3: u64,
    ) {
        let tally = &mut state.tally;
        let (end, ended_by) = match outcome {
            Outcome::Done => (t3, EndedBy::Released),
            Outcome::Lost(noticed) => {
                if cycle.measured {
                    tally.aborted_on_loss += 1;
                }
                (noticed, EndedBy::Lost)
            }
            Outcome::Stopped => {
                if cycle.measured {
                    tally.stopped += 1;
                }
                (t3, EndedBy::Stopped)
            }
        };
        self.report_hold(cycle.key, end, HoldChange::Ended(ended_by));
        if self
            .resource
            .hold_ended(self.client, cycle.key, end, ended_by)
            .await
            .is_err()
        {
            tally.resource_errors += 1;
            self.stop.set();
        }
        let released = lease.release().await;
        let t4 = self.clock.now();
        cycle.release_ns = t4 - t3;
        if cycle.measured {
            if let Err(error) = &released {
                count(&mut tally.release_errors, error);
            }
            record(&mut tally.hold, end.saturating_sub(cycle.t1));
            record(&mut tally.release, cycle.release_ns);
        }
        // The client's belief ended at `end` (release called, or the loss noticed).
        let release = HistoryOp::lock(
            self.client,
            cycle.key,
            HistoryKind::Release,
            end,
            t4.max(end),
        );
        self.record(state, release);
        state.batch.push(Interval {
            key: cycle.key,
            acquire_started: cycle.t0,
            start: cycle.t1,
            end,
            ended_by,
        });
    }

    /// Adds the cycle's times to the tally and hands the batch on when it is full or old.
    fn end_cycle(&self, state: &mut LoopState, cycle: &Cycle) {
        let cycle_end = self.clock.now();
        if cycle.measured {
            let spent = cycle_end - state.cycle_top;
            let strategy = (cycle.t1 - cycle.t0) + cycle.release_ns;
            let tally = &mut state.tally;
            tally.cycles += 1;
            tally.cycle_ns += spent;
            tally.strategy_ns += strategy;
            tally.overhead_ns += spent.saturating_sub(strategy + cycle.idle_ns);
        }
        state.cycle_top = cycle_end;
        if state.batch.len() >= BATCH || cycle_end - state.last_flush >= FLUSH_NS {
            state.last_flush = cycle_end;
            self.flush(state, cycle_end);
        }
    }

    #[inline]
    fn report_hold(&self, key: u32, at_ns: u64, change: HoldChange) {
        if let Some(sink) = &self.holds {
            // The receiver is gone only when the case is over.
            let _ = sink.send(HoldEvent {
                client: self.client,
                key,
                at_ns,
                change,
            });
        }
    }

    fn flush(&self, state: &mut LoopState, low_bound: u64) {
        let intervals = std::mem::replace(&mut state.batch, Vec::with_capacity(BATCH));
        self.intervals.push(IntervalBatch {
            client: self.client,
            intervals,
            low_bound,
            history: std::mem::take(&mut state.history),
        });
    }

    /// Adds `op` to the case's history, when it records one.
    #[inline]
    fn record(&self, state: &mut LoopState, op: HistoryOp) {
        if self.plan.history {
            state.history.push(op);
        }
    }
}
