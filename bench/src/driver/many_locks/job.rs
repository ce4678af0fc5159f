//! What a worker process holding many locks is told, as its first line ([`HoldManyJob`]): the spec
//! narrowed to one strategy, what to measure, and the servers' addresses and process ids.

use serde::{Deserialize, Serialize};

use super::spec::{Isolation, ScaleSpec, Subject};
use crate::backends::Backends;
use crate::kinds::ServerKindExt;
use crate::strategies::Strategy;

/// What a worker process holding many locks is told (its first line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct HoldManyJob {
    /// The settings, with the one strategy to hold.
    pub spec: ScaleSpec,
    /// The strategy's client, or its raw sender.
    pub subject: Subject,
    /// The servers to hold on: addresses the worker uses as given ones, and their process ids.
    pub servers: Vec<JobServer>,
}

/// One server of a [`HoldManyJob`].
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct JobServer {
    /// Its kind's name.
    pub kind: String,
    /// Its address as strategies take it (it may carry credentials: never shown).
    pub address: String,
    /// Its process, for its CPU time.
    pub pid: Option<u32>,
}

impl std::fmt::Debug for JobServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobServer")
            .field("kind", &self.kind)
            .field("address", &lockers::address::redact(&self.address))
            .field("pid", &self.pid)
            .finish()
    }
}

impl HoldManyJob {
    /// The job of `subject` of `strategy` under `spec`, on `backends`.
    pub(crate) fn new(
        strategy: &'static Strategy,
        subject: Subject,
        spec: &ScaleSpec,
        backends: &Backends,
    ) -> Self {
        let servers = backends
            .all()
            .into_iter()
            .filter(|server| server.kind().server().is_some())
            .map(|server| JobServer {
                kind: server.kind().name().to_owned(),
                address: server.address().to_owned(),
                pid: server.pid(),
            })
            .collect();
        HoldManyJob {
            spec: ScaleSpec {
                strategies: vec![strategy],
                isolation: Isolation::InProcess,
                passes: 1,
                ..spec.clone()
            },
            subject,
            servers,
        }
    }
}
