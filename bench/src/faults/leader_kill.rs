//! `leader_kill`, spec and injection: kill the leader of the 3-member etcd cluster or ZooKeeper
//! ensemble a case starts for itself (a kind offers it as [`ServerFault::LeaderKill`]) and wait for
//! a new one.

use super::env::{FaultEnv, NotApplied, Record, ServerAccess, blocking, not_applied};
use super::kind::Needs;
use super::spec::Profile;
use super::topology::Topology;
use crate::kinds::ServerFault;

/// What the family says of `leader_kill`: it takes nothing of its own and strikes the server.
pub(super) const PROFILE: Profile = Profile {
    needs: Needs::Offered(ServerFault::LeaderKill),
    ..Profile::PLAIN
};

/// The servers it starts for itself: a 3-member cluster (it kills the leader).
pub(super) const TOPOLOGY: Topology = Topology::Cluster;

/// Kills the leader of the case's own cluster and waits for a new one.
pub(super) async fn inject(env: &FaultEnv, rec: &mut Record) -> Result<bool, NotApplied> {
    let ServerAccess::Own(own) = env.server.clone() else {
        return not_applied(rec, "leader_kill needs a cluster started for the case");
    };
    match blocking(move || own.kill_leader()).await {
        Ok((what, election)) => {
            rec.took_effect(format!("killed {what}"));
            rec.target = what;
            match election {
                Some(d) => rec.param("new_leader_ms", d.as_secs_f64() * 1e3),
                None => rec.note("no new leader within 10 s"),
            }
        }
        Err(e) => return not_applied(rec, format!("leader kill failed: {e}")),
    }
    Ok(true)
}
