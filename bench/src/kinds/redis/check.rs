//! A given Redis (or Valkey) checked as the strategies connect to it: user and password, TLS, a cluster's layout
//! read from the seeds or the primary asked of the Sentinels, then its version from `INFO`.

use std::time::Duration;

use lockers::redis::{ConnectionSettings, RedisConnection};

use super::{Program, version_in};
use crate::kinds::AddressCheckFuture;

/// How long checking a user's Redis through the strategies' connection may take: to connect, and
/// per answer.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Connects to `address` through the strategies' connection and reads its version (`None` if `INFO`
/// is not allowed); a server that is not `P` is refused.
pub(super) fn through_client<P: Program>(address: &str) -> AddressCheckFuture<'_> {
    Box::pin(async move {
        let settings = ConnectionSettings {
            connect_timeout: CHECK_TIMEOUT,
            response_timeout: CHECK_TIMEOUT,
        };
        let connection = RedisConnection::connect(address, settings).await?;
        let info: Option<String> = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut connection.commands())
            .await
            .ok();
        info.map_or(Ok(None), |info| {
            version_in(P::FLAVOR, &info).map_err(lockers::LockError::Config)
        })
    })
}
