//! Switches authentication on in an etcd member the launcher started: creates the `root` user with a
//! password, gives it the `root` role and enables auth, through etcd's gRPC API (etcd has no flag for
//! it). Runs on a thread of its own with a one-off runtime, so it may be called from anywhere.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::{Result, ServerError};

/// Enables auth on the etcd at `client` (TLS with `ca` when given) with user `root` / `password`.
pub(crate) fn enable(client: SocketAddr, ca: Option<PathBuf>, password: String) -> Result<()> {
    let failed = |why: String| ServerError::Reply {
        server: format!("etcd at {client}"),
        message: why,
    };
    let thread = std::thread::spawn(move || -> std::result::Result<(), String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        runtime.block_on(async move {
            let mut options = etcd_client::ConnectOptions::new();
            let scheme = if let Some(ca) = ca {
                let pem = std::fs::read(&ca).map_err(|e| format!("{}: {e}", ca.display()))?;
                options = options.with_tls(
                    etcd_client::TlsOptions::new()
                        .ca_certificate(etcd_client::Certificate::from_pem(pem)),
                );
                "https"
            } else {
                "http"
            };
            let endpoint = format!("{scheme}://{client}");
            let mut etcd = etcd_client::Client::connect([endpoint], Some(options))
                .await
                .map_err(|e| e.to_string())?;
            etcd.user_add("root", password, None)
                .await
                .map_err(|e| e.to_string())?;
            etcd.role_add("root").await.map_err(|e| e.to_string())?;
            etcd.user_grant_role("root", "root")
                .await
                .map_err(|e| e.to_string())?;
            etcd.auth_enable().await.map_err(|e| e.to_string())?;
            Ok(())
        })
    });
    thread
        .join()
        .map_err(|_| failed("enabling auth panicked".into()))?
        .map_err(failed)
}
