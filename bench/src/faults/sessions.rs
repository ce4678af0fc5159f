//! `terminate_session`, spec and injection: end the sessions holding the holder's lock from the
//! server (PostgreSQL's `pg_terminate_backend`, MySQL's `KILL CONNECTION`), `after_acquire` after
//! its acquire. A kind offers it as [`ServerFault::EndSession`], by its entry's `end_sessions`.

use super::env::{FaultEnv, NotApplied, Record, ServerAccess, Victim, blocking, not_applied};
use super::kind::{Needs, Targets};
use super::spec::Profile;
use crate::kinds::{ServerFault, ServerKindExt};

/// What the family says of `terminate_session`: it strikes a holder, after its acquire if asked.
pub(super) const PROFILE: Profile = Profile {
    allowed: &["after_acquire"],
    targets: Targets::HolderOnServer,
    needs: Needs::Offered(ServerFault::EndSession),
    ..Profile::PLAIN
};

/// Ends the sessions holding `victim`'s lock from the server (its kind's `end_sessions`:
/// `pg_terminate_backend`, `KILL CONNECTION`, as lockbench's administrator): what an administrator,
/// a session timeout or a connection pooler's reaper does.
pub(super) async fn inject(
    env: &FaultEnv,
    rec: &mut Record,
    victim: Option<&Victim>,
) -> Result<bool, NotApplied> {
    let Some((client, key)) = victim.and_then(|v| Some((v.client, v.held?.0))) else {
        return not_applied(
            rec,
            "terminate_session needs a holder (target = \"holder\")",
        );
    };
    let (kind, socket, end_sessions) = match &env.server {
        ServerAccess::Shared { kind, socket, .. } => match kind.faults().end_sessions {
            Some(end) => (*kind, *socket, end),
            None => {
                return not_applied(rec, format!("no session lock on {}", kind.name()));
            }
        },
        ServerAccess::Own(_) | ServerAccess::None => {
            return not_applied(rec, "terminate_session needs the run's PostgreSQL or MySQL");
        }
    };
    let lock = format!("{}{key}", env.key_prefix);
    rec.target = format!(
        "{} {socket}: the session of client {client} holding key {key}",
        kind.name()
    );
    rec.param("client", client);
    rec.param("key", key);
    let lock_c = lock.clone();
    match blocking(move || end_sessions(socket, &lock_c)).await {
        Ok(ended) if ended > 0 => {
            rec.param("sessions_ended", ended);
            rec.took_effect(format!(
                "the server ended {ended} session(s) holding {lock}"
            ));
        }
        Ok(_) => return not_applied(rec, format!("no session held {lock} when it struck")),
        Err(e) => return not_applied(rec, format!("ending the sessions failed: {e}")),
    }
    rec.stop = Some(env.clock.now());
    Ok(true)
}
