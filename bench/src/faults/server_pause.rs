//! `pause_server`, spec and injection: SIGSTOP to the server's process group for the fault's
//! length, then SIGCONT. Every kind with a server lockbench started offers it (the run's shared
//! server, or the primary or leader of servers started for the case).

use super::env::{
    FaultEnv, NotApplied, Record, ServerAccess, blocking, hold_for, not_applied, seen_in_state,
};
use super::kind::Targets;
use super::spec::{Profile, Spec};

/// What the family says of `pause_server`: it takes a duration and needs a real server.
pub(super) const PROFILE: Profile = Profile {
    allowed: &["duration"],
    required: &["duration"],
    targets: Targets::Server,
    ..Profile::PLAIN
};

/// Signals a server's process group.
fn signal_group(pid: u32, signal: libc::c_int) -> Result<(), String> {
    let pgid = i32::try_from(pid).map_err(|e| e.to_string())?;
    // SAFETY: kill(2) has no memory-safety preconditions; servers lockbench starts lead their own
    // process group and stay alive (unreaped) while the case runs.
    if unsafe { libc::kill(-pgid, signal) } == 0 {
        Ok(())
    } else {
        Err(format!(
            "signal {signal} to server {pid}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// SIGSTOP to the server's process group for the fault's length, then SIGCONT.
pub(super) async fn inject(
    spec: &Spec<()>,
    env: &FaultEnv,
    rec: &mut Record,
) -> Result<bool, NotApplied> {
    let target = match &env.server {
        ServerAccess::Shared {
            pid: Some(pid),
            kind,
            socket,
        } => Some((*pid, format!("{} {socket}", kind.name()))),
        ServerAccess::Own(own) => {
            let own = own.clone();
            blocking(move || Ok(own.serving_pid())).await.ok().flatten()
        }
        ServerAccess::Shared { pid: None, .. } | ServerAccess::None => None,
    };
    let Some((pid, what)) = target else {
        return not_applied(
            rec,
            "the server was not started by lockbench (no process to pause)",
        );
    };
    rec.target = what;
    rec.start = env.clock.now();
    if let Err(e) = signal_group(pid, libc::SIGSTOP) {
        return not_applied(rec, e);
    }
    rec.evidence(seen_in_state(pid, 'T', "server process").await);
    hold_for(env, spec.duration, rec).await;
    // The clock is read before the signal: the server may run again the moment it is sent.
    let resumed = env.clock.now();
    if let Err(e) = signal_group(pid, libc::SIGCONT) {
        rec.note(e);
    }
    rec.stop = Some(resumed);
    Ok(true)
}
