//! What the fault tasks of one case share: the server they act on ([`ServerAccess`]), their
//! environment ([`FaultEnv`]), each fault's [`Record`] (turned into its `FaultWindow`), and the steps
//! every kind uses: waiting on the case's clock, picking the target client, measuring what followed
//! from the hold events — when the targeted holder noticed its loss, and when the lock was available
//! again.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use lockbench_reports::model::FaultWindow;

use super::board::{HoldBoard, HoldEnd};
use super::kind::{Aftermath, FaultKind, Target};
use super::proxies::ClientProxies;
use super::workers::WorkerControl;
use crate::backends::ServerKind;
use crate::base::clock::{MonoClock, duration_ns};
use crate::base::holds::EndedBy;
use crate::base::holds::{HoldChange, HoldEvent};
use crate::base::stop::StopSignal;
use crate::kinds::CaseServers;

/// The server a case's faults act on.
#[derive(Debug, Clone)]
pub(crate) enum ServerAccess {
    /// None (the strategy has no server).
    None,
    /// The run's shared server; `pid` when lockbench started it.
    Shared {
        /// Which server.
        kind: ServerKind,
        /// Where it listens.
        socket: SocketAddr,
        /// Its process (a process-group leader), when lockbench started it.
        pid: Option<u32>,
    },
    /// Servers started for this case.
    Own(Arc<dyn CaseServers>),
}

/// Everything the fault tasks of one case share.
#[derive(Debug, Clone)]
pub(crate) struct FaultEnv {
    /// The shared clock.
    pub clock: MonoClock,
    /// The case start (ns); `at` counts from here.
    pub go: u64,
    /// Set when the case ends.
    pub stop: StopSignal,
    /// The workers' hold events.
    pub board: Arc<HoldBoard>,
    /// The worker processes (processes mode).
    pub workers: Option<WorkerControl>,
    /// The clients' proxies, when the case has them.
    pub proxies: Option<Arc<ClientProxies>>,
    /// The server.
    pub server: ServerAccess,
    /// What the case's lock names start with (key `k` is `{key_prefix}{k}`).
    pub key_prefix: String,
}

/// One fault's record while it runs (ns), turned into a [`FaultWindow`] at the end.
#[derive(Debug)]
pub(super) struct Record {
    pub(super) kind: FaultKind,
    /// What the fault leaves behind: whether what followed it is measured.
    pub(super) aftermath: Aftermath,
    pub(super) target: String,
    pub(super) parameters: BTreeMap<String, serde_json::Value>,
    pub(super) start: u64,
    pub(super) stop: Option<u64>,
    pub(super) recovery: Option<u64>,
    pub(super) noticed: Option<u64>,
    pub(super) notes: Vec<String>,
    /// Whether the fault took effect, by its own evidence (`None`: not checked, which its window
    /// records as not applied: no evidence it took effect).
    pub(super) applied: Option<bool>,
    pub(super) evidence: Option<String>,
    /// Why its window ended before its planned end (the case stopped first).
    pub(super) cut_short: Option<String>,
    /// Whether the fault's test of the lock needs its `recovery` (another acquire after it): a
    /// failover ([`Aftermath::recovery_is_evidence`]). Without that acquire nothing tested whether the new
    /// primary let a second holder in, and the window says it was not applied.
    pub(super) recovery_needed: bool,
}

impl Record {
    /// The record of a fault of `kind` on `target`, with its settings `parameters`, planned to
    /// start at `planned`.
    pub(super) fn new(
        (kind, aftermath): (FaultKind, Aftermath),
        target: Target,
        parameters: Vec<(String, serde_json::Value)>,
        planned: u64,
    ) -> Self {
        Record {
            kind,
            aftermath,
            target: target.to_string(),
            parameters: parameters.into_iter().collect(),
            start: planned,
            stop: None,
            recovery: None,
            noticed: None,
            notes: Vec::new(),
            applied: None,
            evidence: None,
            cut_short: None,
            recovery_needed: false,
        }
    }

    /// The fault's window ended before its planned end: `why` (the case has no verdict).
    pub(super) fn cut_short(&mut self, why: impl Into<String>) {
        let why = why.into();
        self.notes.push(format!("cut short: {why}"));
        self.cut_short.get_or_insert(why);
    }

    /// The fault took effect: `evidence` says how that is known.
    pub(super) fn took_effect(&mut self, evidence: impl Into<String>) {
        self.applied = Some(true);
        self.evidence = Some(evidence.into());
    }

    /// The fault did not take effect, for the reason `why` (also a note: `not applied: why`). The
    /// case then has no verdict.
    pub(super) fn not_applied(&mut self, why: impl Into<String>) {
        let why = why.into();
        self.notes.push(format!("not applied: {why}"));
        self.applied = Some(false);
        self.evidence = Some(why);
    }

    /// [`took_effect`](Self::took_effect) or [`not_applied`](Self::not_applied), as `evidence` says.
    pub(super) fn evidence(&mut self, evidence: Result<String, String>) {
        match evidence {
            Ok(e) => self.took_effect(e),
            Err(why) => self.not_applied(why),
        }
    }

    pub(super) fn param(&mut self, name: &str, value: impl Into<serde_json::Value>) {
        self.parameters.insert(name.to_owned(), value.into());
    }

    pub(super) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    pub(super) fn window(mut self, go: u64) -> FaultWindow {
        // Applied means evidence that it was: an unchecked fault, or one that took effect but after
        // which no client acquired what it took away, gives its case no verdict.
        match self.applied {
            None => self.not_applied(NO_EVIDENCE),
            Some(true) if self.recovery_needed && self.recovery.is_none() => {
                let seen = self
                    .evidence
                    .take()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default();
                self.not_applied(format!(
                    "{NO_EVIDENCE}: no client acquired the lock after it struck before the case \
                     ended (recovery_ms null), so nothing tested the lock after it{seen}"
                ));
            }
            Some(_) => {}
        }
        let ms = |ns: u64| ns.saturating_sub(go) as f64 / 1e6;
        let rel = |ns: u64| ns.saturating_sub(self.start) as f64 / 1e6;
        FaultWindow {
            kind: self.kind.name().to_owned(),
            target: self.target,
            parameters: self.parameters,
            start_ms: ms(self.start),
            stop_ms: self.stop.map(ms),
            recovery_ms: self.recovery.map(rel),
            loss_noticed_ms: self.noticed.map(rel),
            note: (!self.notes.is_empty()).then(|| self.notes.join("; ")),
            applied: self.applied,
            evidence: self.evidence,
            cut_short: self.cut_short,
        }
    }
}

/// A fault that was not applied; why is on its record.
pub(super) struct NotApplied;

/// Notes on `rec` that the fault was not applied, and why.
pub(super) fn not_applied<T>(rec: &mut Record, why: impl Into<String>) -> Result<T, NotApplied> {
    rec.not_applied(why);
    Err(NotApplied)
}

/// Why a fault without evidence of its effect counts as not applied.
pub(super) const NO_EVIDENCE: &str = "no evidence it took effect";

/// Waits (up to half a second) for process `pid` to be seen in `state` (`T` stopped after SIGSTOP, `Z`
/// or gone after SIGKILL): the evidence that a signal took effect, or why not.
pub(super) async fn seen_in_state(pid: u32, wanted: char, what: &str) -> Result<String, String> {
    let deadline = std::time::Instant::now() + Duration::from_millis(500);
    loop {
        let state = crate::base::proc_stat::state(pid);
        if state == Some(wanted) || (wanted == 'Z' && state.is_none()) {
            return Ok(format!(
                "{what} {pid} {} (/proc state {})",
                if wanted == 'T' { "stopped" } else { "killed" },
                state.unwrap_or('-')
            ));
        }
        if state.is_none() || std::time::Instant::now() >= deadline {
            return Err(match state {
                None => format!("{what} {pid} was already gone"),
                Some(s) if wanted == 'Z' => {
                    format!("{what} {pid} survived the kill (/proc state {s})")
                }
                Some(s) => format!("{what} {pid} never showed /proc state {wanted} (state {s})"),
            });
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// After a signal to the process group a worker `pid` leads: [`seen_in_state`] of the worker, then of
/// every other process of its group — the peer adapter, the library's own process, whose state is the
/// one that matters for a peer's lock. Evidence only if every one of them was seen in `wanted`: `T`
/// after a pause, `Z` (a zombie, or gone) after a crash; otherwise the error names the process that
/// was not.
async fn group_seen_in_state(pid: u32, wanted: char) -> Result<String, String> {
    let worker = seen_in_state(pid, wanted, "worker process").await?;
    let others: Vec<u32> = crate::base::proc_stat::group_members(pid)
        .into_iter()
        .filter(|p| *p != pid)
        .collect();
    let mut seen = Vec::new();
    for other in others {
        match seen_in_state(other, wanted, "adapter process").await {
            Ok(_) => seen.push(other.to_string()),
            // Gone meanwhile, or a zombie: nothing of it was running.
            Err(_) if matches!(crate::base::proc_stat::state(other), None | Some('Z')) => {}
            Err(why) => return Err(format!("{worker}, but {why}")),
        }
    }
    if seen.is_empty() {
        return Ok(worker);
    }
    Ok(format!(
        "{worker}, with the adapter process{} {} of its group (/proc state {})",
        if seen.len() == 1 { "" } else { "es" },
        seen.join(", "),
        if wanted == 'Z' { "Z or gone" } else { "T" }
    ))
}

/// After a SIGSTOP to the group worker `pid` leads: the worker and every adapter process of its group
/// stopped ([`group_seen_in_state`]).
pub(super) async fn group_seen_stopped(pid: u32) -> Result<String, String> {
    group_seen_in_state(pid, 'T').await
}

/// After a SIGKILL to the group worker `pid` leads: the worker and every adapter process of its group
/// killed ([`group_seen_in_state`]); an adapter that survived the kill keeps the peer's lock alive,
/// so the crash did not happen to the library.
pub(super) async fn group_seen_killed(pid: u32) -> Result<String, String> {
    group_seen_in_state(pid, 'Z').await
}

/// Sleeps until `at` (ns); false if the case ended first.
pub(super) async fn sleep_until(env: &FaultEnv, at: u64) -> bool {
    tokio::select! {
        biased;
        _ = env.stop.wait() => false,
        _ = tokio::time::sleep_until(env.clock.instant(at).into()) => true,
    }
}

/// Waits `d` (how long a fault lasts) or until the case ends, whichever comes first; the caller then
/// lifts the fault. A case that ends first cuts the fault short ([`Record::cut_short`]).
pub(super) async fn hold_for(env: &FaultEnv, d: Option<Duration>, rec: &mut Record) {
    if let Some(d) = d {
        let from = env.clock.now();
        lasts_until(env, from, from + duration_ns(d), rec).await;
    }
}

/// Waits until `until` (ns), the planned end of a fault window that began at `from`; if the case ends
/// first, the fault was cut short, and `rec` says by how much.
pub(super) async fn lasts_until(env: &FaultEnv, from: u64, until: u64, rec: &mut Record) {
    if !sleep_until(env, until).await {
        rec.cut_short(cut_short_words(env.clock.now(), from, until));
    }
}

/// `the case ended 500 ms into its 2 s window`.
pub(super) fn cut_short_words(now: u64, from: u64, until: u64) -> String {
    let d = |ns: u64| crate::base::duration::format_duration(Duration::from_millis(ns / 1_000_000));
    format!(
        "the case ended {} into its {} window",
        d(now.saturating_sub(from)),
        d(until.saturating_sub(from))
    )
}

/// Runs `f` on the blocking pool.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("task failed: {e}"))?
}

/// A client that held a key when the fault hit it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Victim {
    pub(super) client: u32,
    pub(super) held: Option<(u32, u64)>,
}

/// The fault's target client: `holder` waits for the first acquire at or after `from` whose holder
/// still holds when looked at; `client:N` is taken as it is.
pub(super) async fn pick_client(env: &FaultEnv, target: Target, from: u64) -> Option<Victim> {
    match target {
        Target::Client(client) => Some(Victim {
            client,
            held: env.board.holding(client),
        }),
        Target::Holder => {
            // From the start of the log: an acquire posted just before this fault task looked (the
            // first one of a case, for a fault at 0 s) still counts.
            let mut cursor = 0;
            loop {
                let candidate = env
                    .board
                    .next(&mut cursor, &env.stop, |e| {
                        (e.change == HoldChange::Acquired && e.at_ns >= from).then_some(*e)
                    })
                    .await?;
                let held = env.board.holding(candidate.client);
                if held == Some((candidate.key, candidate.at_ns)) {
                    return Some(Victim {
                        client: candidate.client,
                        held,
                    });
                }
            }
        }
        Target::All | Target::Server => None,
    }
}

/// After a fault hit `victim` at `t0` (board position `cursor`): when it noticed the loss of the key it
/// held, and when another client acquired that key.
pub(super) async fn measure_victim(
    env: &FaultEnv,
    victim: Victim,
    cursor: usize,
    t0: u64,
    rec: &mut Record,
) {
    let Some((key, _)) = victim.held else {
        return;
    };
    let client = victim.client;
    let noticed = async {
        let mut c = cursor;
        env.board
            .next(&mut c, &env.stop, |e: &HoldEvent| {
                (e.client == client && e.key == key && matches!(e.change, HoldChange::Ended(_)))
                    .then_some(*e)
            })
            .await
            .filter(|e| e.change == HoldChange::Ended(EndedBy::Lost))
            .map(|e| e.at_ns.max(t0))
    };
    let recovered = async {
        let mut c = cursor;
        env.board
            .next(&mut c, &env.stop, |e: &HoldEvent| {
                (e.key == key
                    && e.client != client
                    && e.change == HoldChange::Acquired
                    && e.at_ns >= t0)
                    .then_some(e.at_ns)
            })
            .await
    };
    let (noticed, recovered) = tokio::join!(noticed, recovered);
    rec.noticed = noticed;
    rec.recovery_needed = rec.aftermath.recovery_is_evidence();
    rec.recovery = recovered.filter(|_| rec.aftermath.measures_recovery());
}

/// After a server-wide fault at `t0`: when any client acquired any key.
pub(super) async fn measure_any(env: &FaultEnv, cursor: usize, t0: u64, rec: &mut Record) {
    rec.recovery_needed = rec.aftermath.recovery_is_evidence();
    let mut c = cursor;
    rec.recovery = env
        .board
        .next(&mut c, &env.stop, |e| {
            (e.change == HoldChange::Acquired && e.at_ns >= t0).then_some(e.at_ns)
        })
        .await;
}

/// For a fault aimed at a holder (`target = holder`): whether the hold it was aimed at was still held
/// when the fault struck at `t0`, by the holder's own hold events (the times its intervals are made
/// of): its end reported at or after `t0`, or its reports ended (the worker died) without one. Waits
/// for that report (see [`HoldBoard::hold_end`]): a hold whose end had not yet arrived when the fault
/// looked is not taken as open. A hold that had ended first was not hit, and one whose holder never
/// said is not known to be: the fault is not applied. Otherwise the evidence says which hold it
/// struck.
pub(super) async fn check_struck_hold(
    env: &FaultEnv,
    target: Target,
    victim: &Victim,
    t0: u64,
    rec: &mut Record,
) {
    if target != Target::Holder {
        return;
    }
    let Some((key, acquired)) = victim.held else {
        return;
    };
    let ms = |ns: u64| ns as f64 / 1e6;
    let end = env
        .board
        .hold_end(victim.client, key, acquired, &env.stop)
        .await;
    match end {
        HoldEnd::Ended(ended) if ended < t0 => rec.not_applied(format!(
            "it struck no hold: client {} had ended its hold of key {key} {:.1} ms before",
            victim.client,
            ms(t0 - ended)
        )),
        HoldEnd::Unknown => rec.not_applied(format!(
            "{NO_EVIDENCE}: client {} never reported whether its hold of key {key} was still open \
             when it struck",
            victim.client
        )),
        _ if rec.applied != Some(false) => {
            let held = format!(
                "client {} held key {key} when it struck (acquired {:.1} ms before)",
                victim.client,
                ms(t0.saturating_sub(acquired))
            );
            rec.evidence = Some(match rec.evidence.take() {
                Some(e) => format!("{e}; {held}"),
                None => held,
            });
        }
        _ => {}
    }
}

pub(super) fn describe_victim(victim: &Victim) -> String {
    match victim.held {
        Some((key, _)) => format!("client {} (holding key {key})", victim.client),
        None => format!("client {}", victim.client),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with(events: &[(u64, HoldChange)]) -> FaultEnv {
        let board = HoldBoard::new();
        for &(at_ns, change) in events {
            board.push(HoldEvent {
                client: 1,
                key: 0,
                at_ns,
                change,
            });
        }
        FaultEnv {
            clock: MonoClock::new(),
            go: 0,
            stop: StopSignal::new(),
            board,
            workers: None,
            proxies: None,
            server: ServerAccess::None,
            key_prefix: String::new(),
        }
    }

    /// The record of a one-second worker pause at the case start, not yet checked.
    fn unchecked_pause() -> Record {
        let kind = FaultKind::Worker(super::super::kind::WorkerFault::Pause);
        let parameters = vec![("duration_ms".to_owned(), 1000.0.into())];
        Record::new((kind, Aftermath::TakesLock), Target::Holder, parameters, 0)
    }

    /// The same, once it took effect.
    fn pause_record() -> Record {
        let mut rec = unchecked_pause();
        rec.took_effect("worker process 7 stopped (/proc state T)");
        rec
    }

    #[tokio::test]
    async fn a_holder_fault_that_struck_after_the_hold_ended_is_not_applied() {
        // Client 1 held key 0 from 100 µs to 200 µs; the fault struck at 300 µs (a 20 ms task that
        // released before the fault landed).
        let env = env_with(&[
            (100_000, HoldChange::Acquired),
            (200_000, HoldChange::Ended(EndedBy::Released)),
        ]);
        let victim = Victim {
            client: 1,
            held: Some((0, 100_000)),
        };
        let mut missed = pause_record();
        check_struck_hold(&env, Target::Holder, &victim, 300_000, &mut missed).await;
        assert_eq!(missed.applied, Some(false));
        assert_eq!(
            missed.evidence.as_deref(),
            Some("it struck no hold: client 1 had ended its hold of key 0 0.1 ms before")
        );
        let mut hit = pause_record();
        check_struck_hold(&env, Target::Holder, &victim, 150_000, &mut hit).await;
        assert_eq!(hit.applied, Some(true));
        assert_eq!(
            hit.evidence.as_deref(),
            Some(
                "worker process 7 stopped (/proc state T); client 1 held key 0 when it struck \
                 (acquired 0.1 ms before)"
            )
        );
        // A client named by the user is hit whether it holds or not.
        let mut named = pause_record();
        check_struck_hold(&env, Target::Client(1), &victim, 300_000, &mut named).await;
        assert_eq!(named.applied, Some(true));
    }

    #[tokio::test]
    async fn a_hold_whose_end_was_still_on_its_way_when_the_fault_struck_was_not_struck() {
        // Client 1 held key 0 from 100 µs and ended it at 200 µs; the fault struck at 300 µs, but the
        // end's report reached the board only afterwards (a worker process's events cross a pipe).
        // It used to count as struck: no end on the board yet read as "still held".
        let env = env_with(&[(100_000, HoldChange::Acquired)]);
        let victim = Victim {
            client: 1,
            held: Some((0, 100_000)),
        };
        let board = env.board.clone();
        let late = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            board.push(HoldEvent {
                client: 1,
                key: 0,
                at_ns: 200_000,
                change: HoldChange::Ended(EndedBy::Released),
            });
        });
        let mut rec = pause_record();
        check_struck_hold(&env, Target::Holder, &victim, 300_000, &mut rec).await;
        late.await.expect("joined");
        assert_eq!(rec.applied, Some(false), "{rec:?}");
        assert!(
            rec.evidence
                .as_deref()
                .unwrap_or("")
                .starts_with("it struck no hold"),
            "{rec:?}"
        );
        // A worker killed holding (its reports end without the end) was struck.
        let env = env_with(&[(100_000, HoldChange::Acquired)]);
        env.board.closed(1);
        let mut killed = pause_record();
        check_struck_hold(&env, Target::Holder, &victim, 300_000, &mut killed).await;
        assert_eq!(killed.applied, Some(true), "{killed:?}");
    }

    #[test]
    fn a_window_without_evidence_or_without_a_later_acquire_is_not_applied() {
        // Never checked: `applied` null once read as applied.
        let w = unchecked_pause().window(0);
        assert_eq!(w.applied, Some(false));
        assert_eq!(w.evidence.as_deref(), Some(NO_EVIDENCE));
        // Took effect on a held key, but nobody acquired the lock after it.
        let mut rec = pause_record();
        rec.recovery_needed = true;
        let w = rec.window(0);
        assert_eq!(w.applied, Some(false));
        assert!(
            w.evidence
                .as_deref()
                .unwrap_or("")
                .contains("no client acquired the lock after it struck"),
            "{w:?}"
        );
        // With the acquire that followed it, applied.
        let mut rec = pause_record();
        rec.recovery_needed = true;
        rec.recovery = Some(5_000_000);
        let w = rec.window(0);
        assert_eq!(w.applied, Some(true));
        assert_eq!(w.recovery_ms, Some(5.0));
    }

    #[tokio::test]
    async fn a_pause_of_a_process_already_gone_did_not_take_effect() {
        let mut child = std::process::Command::new("true").spawn().expect("spawns");
        let pid = child.id();
        child.wait().expect("reaped");
        let seen = seen_in_state(pid, 'T', "worker process").await;
        assert_eq!(seen, Err(format!("worker process {pid} was already gone")));
    }

    /// A "worker" leading its own process group, with a child (as a peer adapter) in that group: the
    /// leader, its pid and the child's pid.
    fn worker_with_adapter() -> (std::process::Child, u32, u32) {
        use std::os::unix::process::CommandExt;
        let leader = std::process::Command::new("sh")
            .args(["-c", "sleep 5 & wait"])
            .process_group(0)
            .spawn()
            .expect("spawns");
        let pid = leader.id();
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while crate::base::proc_stat::group_members(pid).len() < 2 {
            assert!(std::time::Instant::now() < deadline, "the child started");
            std::thread::sleep(Duration::from_millis(5));
        }
        let child = crate::base::proc_stat::group_members(pid)
            .into_iter()
            .find(|p| *p != pid)
            .expect("a child");
        (leader, pid, child)
    }

    #[tokio::test]
    async fn a_crash_counts_only_when_the_adapter_in_the_workers_group_died_too() {
        let (mut leader, pid, child) = worker_with_adapter();
        // Only the worker killed: the library's process lives on, and with it the peer's lock.
        // SAFETY: kill(2) on our own unreaped child and its group.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        let worker_only = group_seen_killed(pid).await;
        // The whole group killed, as a crash_worker does it.
        unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
        let group = group_seen_killed(pid).await;
        let _ = leader.wait();
        let worker_only = worker_only.expect_err("the adapter lived on");
        assert!(
            worker_only.ends_with(&format!(
                "but adapter process {child} survived the kill (/proc state S)"
            )),
            "{worker_only}"
        );
        let group = group.expect("the whole group died");
        // The adapter is listed while a zombie, not once whoever adopted it has reaped it.
        let worker = format!("worker process {pid} killed (/proc state Z)");
        let adapter = format!(
            "{worker}, with the adapter process {child} of its group (/proc state Z or gone)"
        );
        assert!(group == worker || group == adapter, "{group}");
    }

    #[tokio::test]
    async fn a_pause_counts_only_when_the_adapter_in_the_workers_group_stopped_too() {
        let (mut leader, pid, child) = worker_with_adapter();
        // Only the worker stopped: the library's process ran on.
        // SAFETY: kill(2) on our own unreaped child and its group.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        let worker_only = group_seen_stopped(pid).await;
        // The whole group stopped, as a pause_worker does it.
        unsafe { libc::kill(-(pid as i32), libc::SIGSTOP) };
        let group = group_seen_stopped(pid).await;
        unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
        let _ = leader.wait();
        let worker_only = worker_only.expect_err("the adapter ran on");
        assert!(
            worker_only.ends_with(&format!(
                "but adapter process {child} never showed /proc state T (state S)"
            )),
            "{worker_only}"
        );
        assert_eq!(
            group,
            Ok(format!(
                "worker process {pid} stopped (/proc state T), with the adapter process {child} of \
                 its group (/proc state T)"
            ))
        );
    }

    #[tokio::test]
    async fn a_stopped_process_is_seen_stopped() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("spawns");
        let pid = child.id();
        let running = seen_in_state(pid, 'T', "worker process").await;
        assert!(running.is_err(), "{running:?}");
        // SAFETY: kill(2) has no memory-safety preconditions; the child is ours and unreaped.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        let stopped = seen_in_state(pid, 'T', "worker process").await;
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            stopped,
            Ok(format!("worker process {pid} stopped (/proc state T)"))
        );
    }
}
