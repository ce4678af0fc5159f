//! What every fault on the server shares: the holder a fault aimed at one strikes (right after its
//! acquire, or `after_acquire` later), and, once the fault's family applied it, measuring what
//! followed (for a holder: whether its hold was struck, when it noticed, when the lock was free
//! again; for the server as a whole: the next acquire).

use super::env::{
    FaultEnv, NotApplied, Record, Victim, check_struck_hold, measure_any, measure_victim,
    not_applied, pick_client, sleep_until,
};
use super::kind::Target;
use super::spec::Spec;
use crate::base::clock::duration_ns;

/// A fault on the server as it struck: its victim (none for the server as a whole), the hold
/// board's position and the time it struck.
#[derive(Debug, Clone, Copy)]
pub(super) struct Struck {
    /// The holder it was aimed at.
    pub(super) victim: Option<Victim>,
    cursor: usize,
    /// When it struck (ns).
    pub(super) t0: u64,
}

/// Waits for the fault's victim, if it is aimed at one, and starts its record's clock.
pub(super) async fn strike(
    spec: &Spec<()>,
    env: &FaultEnv,
    rec: &mut Record,
) -> Result<Struck, NotApplied> {
    let victim = strike_after_acquire(spec, env, rec).await?;
    let cursor = env.board.cursor();
    let t0 = env.clock.now();
    rec.start = t0;
    Ok(Struck { victim, cursor, t0 })
}

/// After the fault's family `applied` it (whether to measure what followed): what followed.
pub(super) async fn measure(
    spec: &Spec<()>,
    env: &FaultEnv,
    rec: &mut Record,
    struck: Struck,
    applied: Result<bool, NotApplied>,
) {
    let Ok(measure) = applied else {
        return;
    };
    let Struck { victim, cursor, t0 } = struck;
    // A fault aimed at a holder (a failover or a busy script right after its acquire) must have
    // struck while that hold lasted, or no lock was at stake.
    if let Some(v) = &victim {
        check_struck_hold(env, spec.target, v, t0, rec).await;
    }
    match victim {
        Some(v) => measure_victim(env, v, cursor, t0, rec).await,
        None if measure => measure_any(env, cursor, t0, rec).await,
        None => {}
    }
}

/// The holder a fault aimed at one strikes (right after its acquire, or `after_acquire` later);
/// none for a fault on the server as a whole.
async fn strike_after_acquire(
    spec: &Spec<()>,
    env: &FaultEnv,
    rec: &mut Record,
) -> Result<Option<Victim>, NotApplied> {
    // A failover aimed at a holder strikes right after that client's acquire.
    let victim = if spec.target == Target::Holder {
        let Some(v) = pick_client(env, spec.target, rec.start).await else {
            return not_applied(rec, "no client acquired a lock before the case ended");
        };
        Some(v)
    } else {
        None
    };
    if let (
        Some(after),
        Some(Victim {
            held: Some((_, acquired)),
            ..
        }),
    ) = (spec.after_acquire, &victim)
        && !sleep_until(env, acquired + duration_ns(after)).await
    {
        return not_applied(rec, "the case ended before after_acquire");
    }
    Ok(victim)
}
