//! The Valkey kind: one Valkey server (or the primary its Sentinels name, or a Valkey cluster's
//! nodes), Redis's fork, on which every Redis row runs unchanged. It is the Redis kind's entry on
//! another program (`ValkeyProgram`): the same address forms, probes, counters, held-lock probe,
//! address check and per-case set-ups (failover pair, Sentinels, cluster, restartable server, with
//! `CLIENT PAUSE` and the other server commands), written once in `kinds/redis/` and parametrized by
//! [`Flavor`]; only its flag, password variable and version differ (`valkey_version`, and a server
//! not saying `server_name:valkey` is refused). lockbench never starts a TLS server for a case, and
//! the pinned `valkey-server` has no TLS: `--valkey rediss://…` is for a team's own Valkey.

use lockbench_servers::Flavor;

use super::redis::{self, Program, case_servers::VALKEY_STARTS};
use super::{EndpointAddrs, KindEntry, ServerKind};

/// The kind's id, as the strategy registry names it.
pub const KIND: ServerKind = ServerKind::Valkey;

/// Valkey as the program of the Redis kind's entry: its addresses in the run's `valkey` fields.
pub(crate) struct ValkeyProgram;

impl Program for ValkeyProgram {
    const FLAVOR: Flavor = Flavor::Valkey;
    const KIND: ServerKind = KIND;
    const NODES: ServerKind = ServerKind::ValkeyNodes;
    fn swap_into_redis_fields(endpoints: &mut EndpointAddrs) {
        endpoints.swap_valkey_with_redis();
    }
}

/// The Valkey kind.
pub(super) static VALKEY: KindEntry = redis::entry::<ValkeyProgram>(
    "valkey",
    "Use this Valkey instead of starting one, for valkey-ifeq and the Redis rows run on Valkey \
     (ROW~valkey); the address forms of --redis. The password may come from \
     LOCKBENCH_VALKEY_PASSWORD.",
    "LOCKBENCH_VALKEY_PASSWORD",
    VALKEY_STARTS,
);
