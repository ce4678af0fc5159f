//! The Valkey-nodes kind: N independent Valkey servers, Redlock's masters on Valkey (5 when lockbench
//! starts them, `redlock~valkey`): the Redis-nodes kind's entry and node faults on `valkey-server`
//! (see `kinds/redis_nodes/`).

use super::redis_nodes::{self, case_servers::VALKEY_STARTS};
use super::valkey::ValkeyProgram;
use super::{KindEntry, ServerKind};

/// The kind's id, as the strategy registry names it.
pub const KIND: ServerKind = ServerKind::ValkeyNodes;

/// The Valkey-nodes kind.
pub(super) static VALKEY_NODES: KindEntry = redis_nodes::entry::<ValkeyProgram>(
    "valkey-nodes",
    "Use these independent Valkey servers as Redlock's nodes for redlock~valkey instead of \
     starting five (URLs as for --valkey, comma-separated).",
    "LOCKBENCH_VALKEY_PASSWORD",
    VALKEY_STARTS,
);
