//! A server-side count of renew calls on lock keys nobody holds (the renewal-after-unlock check,
//! redisson#7272): a `MONITOR` connection of its own follows the commands Redis runs during a case and
//! tells the Redis strategies' scripts apart by the SHA1 each `EVALSHA` names
//! ([`lockers::redis::script_shas`]). A lock key is free from a release call naming it until the next
//! acquire call naming it; a renew call naming a free key is a renewal after unlock. Commands run
//! inside scripts (`[0 lua]` lines) are not top-level calls and are skipped.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use lockbench_reports::model::RenewAfterUnlock;
use lockers::redis::{ScriptRole, script_shas};

/// A running count; [`RenewMonitor::finish`] ends it.
#[derive(Debug)]
pub struct RenewMonitor {
    stream: TcpStream,
    reader: JoinHandle<RenewAfterUnlock>,
}

impl RenewMonitor {
    /// Opens a `MONITOR` connection to the Redis at `socket`, authenticated as `auth` (an ACL user)
    /// when given; the error is one line and never contains the password.
    pub fn start(socket: SocketAddr, auth: Option<(&str, &str)>) -> Result<Self, String> {
        let mut stream = TcpStream::connect_timeout(&socket, Duration::from_secs(2))
            .map_err(|e| format!("MONITOR connection to {socket}: {e}"))?;
        if let Some((user, password)) = auth {
            super::stats::note_probe_auth(socket);
            // The `+OK` answer is read (and ignored) as the first line of the stream below.
            let mut request = b"*3\r\n$4\r\nAUTH\r\n".to_vec();
            for arg in [user, password] {
                request.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
            }
            stream
                .write_all(&request)
                .map_err(|e| format!("AUTH on {socket}: {e}"))?;
        }
        stream
            .write_all(b"MONITOR\r\n")
            .map_err(|e| format!("MONITOR on {socket}: {e}"))?;
        let mut lines = BufReader::new(
            stream
                .try_clone()
                .map_err(|e| format!("MONITOR on {socket}: {e}"))?,
        );
        let reader = std::thread::spawn(move || {
            let mut count = Count::new();
            let mut line = String::new();
            while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                count.line(&line);
                line.clear();
            }
            count.total
        });
        Ok(RenewMonitor { stream, reader })
    }

    /// Stops following (after `settle`, so commands still in flight are seen) and returns the count.
    pub fn finish(self, settle: Duration) -> RenewAfterUnlock {
        std::thread::sleep(settle);
        let _ = self.stream.shutdown(Shutdown::Both);
        self.reader.join().unwrap_or(RenewAfterUnlock {
            renew_calls: 0,
            on_released_keys: 0,
            releases: 0,
        })
    }
}

/// The count over the lines seen so far.
struct Count {
    roles: HashMap<&'static str, ScriptRole>,
    free: HashSet<String>,
    total: RenewAfterUnlock,
}

impl Count {
    fn new() -> Self {
        Count {
            roles: script_shas().into_iter().map(|(r, sha)| (sha, r)).collect(),
            free: HashSet::new(),
            total: RenewAfterUnlock {
                renew_calls: 0,
                on_released_keys: 0,
                releases: 0,
            },
        }
    }

    /// One `MONITOR` line: `<time> [<db> <client>] "EVALSHA" "<sha>" "<numkeys>" "<key>"... "<arg>"...`.
    fn line(&mut self, line: &str) {
        if line.contains(" lua]") {
            return;
        }
        let args: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
        let [command, sha, numkeys, rest @ ..] = args.as_slice() else {
            return;
        };
        if !command.eq_ignore_ascii_case("evalsha") {
            return;
        }
        let Some(role) = self.roles.get(sha) else {
            return;
        };
        let n = numkeys.parse::<usize>().unwrap_or(0).min(rest.len());
        let keys = &rest[..n];
        match role {
            ScriptRole::Acquire => {
                if let Some(key) = keys.first() {
                    self.free.remove(*key);
                }
            }
            ScriptRole::Release => {
                if let Some(key) = keys.first() {
                    self.total.releases += 1;
                    self.free.insert((*key).to_owned());
                }
            }
            ScriptRole::Renew => {
                self.total.renew_calls += 1;
                let stale = keys.iter().filter(|k| self.free.contains(**k)).count();
                self.total.on_released_keys += stale as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewals_of_released_keys_are_counted_until_the_next_acquire() {
        let sha = |role| {
            script_shas()
                .into_iter()
                .find(|(r, _)| *r == role)
                .map(|(_, s)| s)
                .expect("a script of each role")
        };
        let call = |role, keys: &[&str]| {
            let quoted: Vec<String> = keys.iter().map(|k| format!("\"{k}\"")).collect();
            format!(
                "1.0 [0 127.0.0.1:1] \"EVALSHA\" \"{}\" \"{}\" {} \"arg\"\n",
                sha(role),
                keys.len(),
                quoted.join(" ")
            )
        };
        let mut count = Count::new();
        for line in [
            call(ScriptRole::Acquire, &["k1"]),
            call(ScriptRole::Renew, &["k1"]),
            call(ScriptRole::Release, &["k1", "c"]),
            "1.0 [0 lua] \"hexists\" \"k1\" \"f\"\n".to_owned(),
            call(ScriptRole::Renew, &["k1", "k2"]),
            call(ScriptRole::Acquire, &["k1"]),
            call(ScriptRole::Renew, &["k1"]),
        ] {
            count.line(&line);
        }
        assert_eq!(count.total.renew_calls, 3);
        assert_eq!(count.total.on_released_keys, 1);
        assert_eq!(count.total.releases, 1);
    }
}
