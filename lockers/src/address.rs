//! Server addresses as users write them, with credentials and TLS files inside: `user:pass@` in the
//! authority (`rediss://app:secret@db:6380`, `https://root:pw@etcd:2379`, `app:pw@zk:2181`) and the
//! TLS files as query parameters (`?ca=ca.pem&cert=client.pem&key=client.key`). This module splits
//! those parts off for the backend clients and gives the redacted form ([`redact`]), the only form of an
//! address that may appear in an error, a log, a results file or a report.
//!
//! Characters with a meaning in an address (`@ / ? & , :`) must be percent-encoded in a password
//! (`%40` for `@`); the user name and password are percent-decoded here.

use std::fmt;
use std::path::PathBuf;

use crate::error::LockError;

/// The address with every `user[:password]@` replaced by `***@`; comma-separated lists are redacted
/// part by part. Addresses without credentials come back unchanged.
pub fn redact(address: &str) -> String {
    let mut out = String::with_capacity(address.len());
    let mut rest = address;
    while let Some(at) = rest.find('@') {
        // The credentials start after the nearest "://" or ',' before the '@' (or at the start).
        let before = &rest[..at];
        let start = [
            before.rfind("://").map(|i| i + 3),
            before.rfind(',').map(|i| i + 1),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0);
        out.push_str(&rest[..start]);
        out.push_str("***@");
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
    out
}

/// A user name and password taken from an address. `Debug` shows the user only.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name (may be empty: `:pass@` is a password without a user, as Redis's `requirepass`).
    pub user: String,
    /// The password.
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"***")
            .finish()
    }
}

/// The TLS files named in an address's query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM file of the certificate authorities to trust (`ca=`); none = the system's roots.
    pub ca: Option<PathBuf>,
    /// PEM file of the client certificate (`cert=`), for servers that check clients.
    pub cert: Option<PathBuf>,
    /// PEM file of the client certificate's key (`key=`).
    pub key: Option<PathBuf>,
}

impl TlsFiles {
    /// True when no TLS file was named.
    pub fn is_empty(&self) -> bool {
        self.ca.is_none() && self.cert.is_none() && self.key.is_none()
    }

    /// The CA file's contents, if one was named. An unreadable file is a `Config` error naming it.
    pub fn read_ca(&self) -> Result<Option<Vec<u8>>, LockError> {
        self.ca.as_ref().map(|path| read("ca", path)).transpose()
    }

    /// The client certificate and key, if named; one without the other is a `Config` error.
    pub fn read_client(&self) -> Result<Option<ClientIdentity>, LockError> {
        match (&self.cert, &self.key) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => Ok(Some(ClientIdentity {
                cert: read("cert", cert)?,
                key: read("key", key)?,
            })),
            _ => Err(LockError::Config(
                "a client certificate needs both cert= and key= in the address".into(),
            )),
        }
    }
}

/// A client certificate and its key, PEM. `Debug` shows neither.
pub struct ClientIdentity {
    /// The certificate (chain).
    pub cert: Vec<u8>,
    /// The private key.
    pub key: Vec<u8>,
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientIdentity { .. }")
    }
}

fn read(name: &str, path: &PathBuf) -> Result<Vec<u8>, LockError> {
    std::fs::read(path)
        .map_err(|e| LockError::Config(format!("{name}={}: cannot read: {e}", path.display())))
}

/// One address taken apart: what the backend client is given, the credentials, and the TLS files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parts {
    /// The address without credentials and without the TLS parameters (other query parameters stay).
    pub bare: String,
    /// `user:pass@`, percent-decoded, when present.
    pub credentials: Option<Credentials>,
    /// `ca=`, `cert=`, `key=` from the query.
    pub tls: TlsFiles,
}

/// Takes one address (not a comma-separated list) apart. An unknown scheme is left to the backend.
pub fn split(address: &str) -> Result<Parts, LockError> {
    let (scheme, rest) = match address.find("://") {
        Some(i) => address.split_at(i + 3),
        None => ("", address),
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (rest, None),
    };
    let (credentials, location) = match before_query.rsplit_once('@') {
        Some((userinfo, location)) => {
            let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            let credentials = Credentials {
                user: percent_decode(user)?,
                password: percent_decode(password)?,
            };
            (Some(credentials), location)
        }
        None => (None, before_query),
    };
    let mut tls = TlsFiles::default();
    let mut kept = Vec::new();
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let slot = match name {
            "ca" => &mut tls.ca,
            "cert" => &mut tls.cert,
            "key" => &mut tls.key,
            _ => {
                if !pair.is_empty() {
                    kept.push(pair);
                }
                continue;
            }
        };
        if value.is_empty() {
            return Err(LockError::Config(format!(
                "{}: {name}= needs a file path",
                redact(address)
            )));
        }
        *slot = Some(PathBuf::from(percent_decode(value)?));
    }
    let mut bare = format!("{scheme}{location}");
    if !kept.is_empty() {
        bare.push('?');
        bare.push_str(&kept.join("&"));
    }
    Ok(Parts {
        bare,
        credentials,
        tls,
    })
}

fn percent_decode(text: &str) -> Result<String, LockError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    LockError::Config("a bad %-escape in an address's credentials or path".into())
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| LockError::Config("an address's %-escapes are not UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_every_credential() {
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(
            redact("rediss://app:s3cret@127.0.0.1:1/0?ca=/x"),
            "rediss://***@127.0.0.1:1/0?ca=/x"
        );
        assert_eq!(
            redact("https://u:p@a:1,https://u:p@b:2"),
            "https://***@a:1,https://***@b:2"
        );
        assert_eq!(redact("u:p/q@h:2181,h2:2181"), "***@h:2181,h2:2181");
        assert_eq!(redact("redis://:pw@h"), "redis://***@h");
    }

    #[test]
    fn split_takes_credentials_and_tls_files() {
        let parts = split("rediss://app:p%40ss@127.0.0.1:6380/2?ca=/tmp/ca.pem&protocol=resp3")
            .expect("valid");
        assert_eq!(parts.bare, "rediss://127.0.0.1:6380/2?protocol=resp3");
        let credentials = parts.credentials.expect("credentials");
        assert_eq!(
            (credentials.user.as_str(), credentials.password.as_str()),
            ("app", "p@ss")
        );
        assert_eq!(parts.tls.ca, Some(PathBuf::from("/tmp/ca.pem")));
        assert!(!format!("{credentials:?}").contains("p@ss"));
        let plain = split("127.0.0.1:2181").expect("valid");
        assert_eq!(plain.bare, "127.0.0.1:2181");
        assert!(plain.credentials.is_none() && plain.tls.is_empty());
        assert!(split("rediss://h?ca=").is_err());
        let error = split("redis://u:secret@h?cert=").expect_err("empty cert");
        assert!(!error.to_string().contains("secret"));
    }
}
