//! A given Redis checked as the strategies connect to it: user and password, TLS, a cluster's layout
//! read from the seeds or the primary asked of the Sentinels, then its version from `INFO`.

use std::time::Duration;

use lockers::redis::{ConnectionSettings, RedisConnection};

use crate::kinds::AddressCheckFuture;

/// How long checking a user's Redis through the strategies' connection may take: to connect, and
/// per answer.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Connects to `address` through the strategies' connection and reads its version (`None` if `INFO`
/// is not allowed).
pub(super) fn through_client(address: &str) -> AddressCheckFuture<'_> {
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
        Ok(info.and_then(|info| {
            lockbench_servers::redis::info_field(&info, "redis_version").map(str::to_owned)
        }))
    })
}
