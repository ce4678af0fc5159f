//! A server password for an adapter: lockbench gives it to the adapter process in its environment
//! ([`PASSWORD_VARIABLE`]), never in `hello` (whose addresses keep the user and drop the password),
//! on the command line, or in the adapter's log; the adapter reads it from there. Only the server
//! kinds whose adapters read it are given addresses with a password (lockbench's strategy table
//! refuses the others).

use crate::address;
use crate::error::LockError;

/// The environment variable an adapter reads its servers' password from (unset when they have none).
pub const PASSWORD_VARIABLE: &str = "LOCKBENCH_SERVER_PASSWORD";

/// A password that `Debug` does not show.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Password(pub(crate) String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(***)")
    }
}

/// `servers` with their password taken out (`mysql://app:pw@host/db` → `mysql://app@host/db`), and
/// that password; an error when they carry different ones (one process has one environment).
pub(crate) fn take_password(
    servers: &[String],
) -> Result<(Vec<String>, Option<Password>), LockError> {
    let mut password: Option<String> = None;
    let mut bare = Vec::with_capacity(servers.len());
    for server in servers {
        let parts = address::split(server)?;
        let given = parts
            .credentials
            .map(|c| c.password)
            .filter(|p| !p.is_empty());
        let Some(given) = given else {
            bare.push(server.clone());
            continue;
        };
        if password.as_ref().is_some_and(|p| *p != given) {
            return Err(LockError::Config(format!(
                "peer adapters take one password for all their servers ({})",
                address::redact(&servers.join(","))
            )));
        }
        password = Some(given);
        bare.push(without_password(server));
    }
    Ok((bare, password.map(Password)))
}

/// `server` with the `:password` of its `user:password@` removed.
fn without_password(server: &str) -> String {
    let start = server.find("://").map_or(0, |i| i + 3);
    let end = server[start..]
        .find(['/', '?'])
        .map_or(server.len(), |i| start + i);
    let authority = &server[start..end];
    let Some((userinfo, location)) = authority.rsplit_once('@') else {
        return server.to_owned();
    };
    let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
    format!("{}{user}@{location}{}", &server[..start], &server[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_leaves_the_address_and_the_user_stays() {
        let servers = vec![
            "mysql://lockbench:s%40cret@127.0.0.1:3306/lockbench".to_owned(),
            "mysql://lockbench@127.0.0.1:3307/lockbench?ssl=0".to_owned(),
        ];
        let (bare, password) = take_password(&servers).expect("one password");
        assert_eq!(
            bare,
            [
                "mysql://lockbench@127.0.0.1:3306/lockbench",
                "mysql://lockbench@127.0.0.1:3307/lockbench?ssl=0"
            ]
        );
        assert_eq!(password, Some(Password("s@cret".into())));
        assert_eq!(format!("{password:?}"), "Some(Password(***))");
        let plain = vec!["redis://127.0.0.1:6379".to_owned()];
        assert_eq!(take_password(&plain).expect("none"), (plain.clone(), None));
        let two = vec![
            "mysql://a:x@h:1/d".to_owned(),
            "mysql://a:y@h:2/d".to_owned(),
        ];
        let why = take_password(&two).expect_err("two passwords").to_string();
        assert!(
            why.contains("one password") && !why.contains(":x@"),
            "{why}"
        );
    }
}
