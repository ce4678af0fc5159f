//! A set of server members started together (an etcd cluster, a ZooKeeper ensemble): finding
//! the leader, and killing, pausing and resuming one member by index.

use std::time::Duration;

use crate::{ServerProcess, poll};

/// A server that can be one member of a [`ServerGroup`].
pub trait GroupMember {
    /// The member's process handle.
    fn process(&self) -> &ServerProcess;

    /// Whether the member says it is the leader right now (false if it does not answer).
    fn is_leader_now(&self) -> bool;
}

/// Members started together as one replicated service, each killed on drop.
#[derive(Debug)]
pub struct ServerGroup<M> {
    members: Vec<M>,
    startup: Duration,
}

impl<M: GroupMember> ServerGroup<M> {
    pub(crate) fn new(members: Vec<M>, startup: Duration) -> Self {
        Self { members, startup }
    }

    /// The number of members (killed ones included).
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Always false: a group has at least one member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Member `i` (0-based).
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn member(&self, i: usize) -> &M {
        &self.members[i]
    }

    /// All members.
    pub fn members(&self) -> &[M] {
        &self.members
    }

    /// The index of the member that says it is the leader, asking running members in order;
    /// `None` if none does right now (e.g. during an election).
    pub fn leader(&self) -> Option<usize> {
        self.members
            .iter()
            .position(|m| m.process().is_running() && m.is_leader_now())
    }

    /// Polls [`leader`](Self::leader) until one appears or `timeout` passes.
    pub fn wait_for_leader(&self, timeout: Duration) -> Option<usize> {
        let mut leader = None;
        poll::until(timeout, || {
            leader = self.leader();
            leader.is_some()
        });
        leader
    }

    /// Kills member `i` with `SIGKILL` (its data dir stays until the group is dropped).
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn kill(&self, i: usize) -> std::io::Result<()> {
        self.member(i).process().kill()
    }

    /// Freezes member `i` with `SIGSTOP`.
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn pause(&self, i: usize) -> std::io::Result<()> {
        self.member(i).process().pause()
    }

    /// Lets member `i` continue with `SIGCONT`.
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn resume(&self, i: usize) -> std::io::Result<()> {
        self.member(i).process().resume()
    }

    /// Every member's process id.
    pub fn pids(&self) -> Vec<u32> {
        self.members.iter().map(|m| m.process().pid()).collect()
    }

    /// How long `start` took until every member was ready.
    pub fn startup(&self) -> Duration {
        self.startup
    }
}
