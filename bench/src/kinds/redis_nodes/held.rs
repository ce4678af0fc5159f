//! What `lockbench scale` reads of Redlock's independent nodes while its client only holds locks:
//! their locks are not counted, only the first node's CPU time; cleaning a node is a Redis's.

use crate::kinds::held::{HeldProbe, NOT_COUNTED};

/// The held-lock probe of Redlock's nodes.
pub(super) const HELD: HeldProbe = HeldProbe {
    clean: Some(crate::kinds::redis::held::flush_all),
    ..NOT_COUNTED
};
