//! A given MySQL or MariaDB checked as the strategies connect to it: its login, TLS and the tables
//! the strategies need, then its version.

use std::time::Duration;

use crate::kinds::AddressCheckFuture;

/// How long checking a user's MySQL through the strategies' client may take to connect.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// Connects to `address` through the strategies' client and reads its version.
pub(super) fn through_client(address: &str) -> AddressCheckFuture<'_> {
    Box::pin(async move {
        lockers::mysql::check_server(address, CHECK_TIMEOUT)
            .await
            .map(Some)
    })
}
