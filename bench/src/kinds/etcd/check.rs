//! A given etcd checked as the strategies connect to it: a client of the etcd strategy asks one
//! member for its status.

use std::time::Duration;

use lockers::Events;
use lockers::etcd::{EtcdConfig, EtcdLease};

use crate::kinds::AddressCheckFuture;

/// How long checking a user's etcd through the etcd strategy's client may take to connect.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// Connects a client of the etcd strategy to the endpoints in `address` (comma-separated).
pub(super) fn through_client(address: &str) -> AddressCheckFuture<'_> {
    Box::pin(async move {
        let endpoints: Vec<String> = address.split(',').map(|e| e.trim().to_owned()).collect();
        let config = EtcdConfig {
            connect_timeout: CHECK_TIMEOUT,
            ..EtcdConfig::default()
        };
        EtcdLease::connect(&endpoints, config, Events::none()).await?;
        Ok(None)
    })
}
