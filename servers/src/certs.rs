//! Throw-away TLS material for servers started with TLS: a certificate authority and a server
//! certificate for `127.0.0.1` / `localhost` signed by it, made with the `openssl` command-line tool in
//! a fresh temp dir that is removed on drop. Nothing here is ever meant to be kept or committed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;

use crate::process::make_temp_dir;
use crate::{Result, ServerError};

/// A CA and a server certificate (SAN `IP:127.0.0.1`, `DNS:localhost`), PEM files in a temp dir.
#[derive(Debug)]
pub struct TestCertificates {
    dir: TempDir,
}

impl TestCertificates {
    /// Generates the CA and the server certificate (RSA 2048, valid one day). A missing `openssl` is
    /// [`ServerError::Missing`].
    pub fn generate() -> Result<Self> {
        let dir = make_temp_dir("certs")?;
        let at = |name: &str| dir.path().join(name);
        let ext = at("server.ext");
        std::fs::write(
            &ext,
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
        )?;
        let steps: [&[&str]; 4] = [
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=lockbench test CA",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
            ],
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=127.0.0.1",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
            ],
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "1",
                "-extfile",
                "server.ext",
                "-out",
                "server.pem",
            ],
            &["rsa", "-in", "server.key", "-out", "server.key"],
        ];
        for args in steps {
            openssl(dir.path(), args)?;
        }
        Ok(TestCertificates { dir })
    }

    /// The CA certificate clients trust.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The server certificate.
    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    /// The server certificate's key (unencrypted PEM).
    pub fn key(&self) -> PathBuf {
        self.dir.path().join("server.key")
    }
}

/// A server's TLS files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The server certificate (PEM).
    pub cert: PathBuf,
    /// Its key (PEM).
    pub key: PathBuf,
    /// The CA that signed it (PEM), also what clients are told to trust.
    pub ca: PathBuf,
}

impl TlsFiles {
    /// The files of `certificates`.
    pub fn of(certificates: &TestCertificates) -> Self {
        TlsFiles {
            cert: certificates.cert(),
            key: certificates.key(),
            ca: certificates.ca(),
        }
    }
}

fn openssl(dir: &Path, args: &[&str]) -> Result<()> {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ServerError::Missing {
                program: "openssl".into(),
                install: "sudo apt-get install openssl".into(),
            },
            _ => ServerError::Io(e),
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(ServerError::Start {
            server: format!("openssl {}", args[0]),
            reason: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            log_tail: String::new(),
        })
    }
}
