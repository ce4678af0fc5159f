//! A server-side count of renew calls on lock keys nobody holds (the renewal-after-unlock check,
//! redisson#7272): a `MONITOR` connection of its own follows the commands Redis runs during a case and
//! tells the Redis strategies' scripts apart by the SHA1 each `EVALSHA` names
//! ([`lockers::redis::script_shas`]). A lock key is free from a release call naming it until the next
//! acquire call naming it; a renew call naming a free key is a renewal after unlock. Commands run
//! inside scripts (`[0 lua]` lines) are not top-level calls and are skipped.
//!
//! The same connection also counts what holding a model row against its library needs
//! ([`Followed`]): the top-level commands the clients sent, the scripts they ran by SHA1 (an `EVAL`'s
//! text is hashed as Redis would), and the calls of scripts known to renew a lock (lockbench's own and
//! the libraries' in [`LIBRARY_RENEW_SCRIPTS`]).
//!
//! A library's scripts (the real Redisson's) are known by what they do: the text of every `EVAL` and
//! `SCRIPT LOAD` the count sees is classified by the commands it calls (`role_of_text`) and its SHA1
//! remembered, so the library's later `EVALSHA`s count as acquire, renew or release calls too. A
//! script loaded before the count started stays unknown.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use lockbench_reports::model::RenewAfterUnlock;
use lockers::redis::{ScriptRole, script_shas};

/// The renewal scripts of the peer libraries, by SHA1 of their text (from each pinned version's
/// source): redsync v4.18.1's `touchScript` and `touchWithSetNXScript` (Extend), node redlock
/// 5.0.0-beta.2's `EXTEND_SCRIPT`.
pub const LIBRARY_RENEW_SCRIPTS: &[&str] = &[
    "d75bb8b5bd13532ddedd17762e772346e39b321e",
    "b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79",
    "aed6f382e410db8ba7926d4e5e9aab410bf2a78a",
];

/// The real Redisson's lock scripts by SHA1 and role, as `MONITOR` showed them (`lockbench run -s
/// renewal-after-unlock` with `jvm-redisson-3.43`, `jvm-redisson`, `jvm-redisson-4`, 2026-11-25): the
/// acquire and release of 3.43.0, 3.52.0 and 4.7.0 (one text each), 3.43.0's renewal (`EVAL`) and
/// 3.52.0's and 4.7.0's batch renewal. Known beforehand because a case whose server already cached them
/// (an earlier case of the same library) sends no text; [`role_of_text`] reads their roles too.
const REDISSON_SCRIPTS: &[(&str, ScriptRole)] = &[
    (
        "149c5a8bf18676fd99e9e6e24923bd64d9b62f94",
        ScriptRole::Acquire,
    ),
    (
        "6866459238a13a701d42f4971f12d9f3a50e2442",
        ScriptRole::Release,
    ),
    (
        "8e19a1ddbdee9138df9f32a480c57addab4353d1",
        ScriptRole::Renew,
    ),
    (
        "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635",
        ScriptRole::Renew,
    ),
];

/// What `MONITOR` showed of a case's top-level commands.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Followed {
    /// Top-level commands, but lockbench's own `INFO` probes.
    pub commands: u64,
    /// Script calls (`EVALSHA`, `EVAL`) by the script's SHA1.
    pub scripts: BTreeMap<String, u64>,
    /// Of those, calls of a script known to renew a lock.
    pub renew_calls: u64,
}

impl Followed {
    /// Adds another node's count.
    pub fn add(&mut self, other: &Followed) {
        self.commands += other.commands;
        self.renew_calls += other.renew_calls;
        for (sha, n) in &other.scripts {
            *self.scripts.entry(sha.clone()).or_default() += n;
        }
    }
}

/// A running count; [`RenewMonitor::finish`] ends it.
#[derive(Debug)]
pub struct RenewMonitor {
    stream: TcpStream,
    reader: JoinHandle<(RenewAfterUnlock, Followed)>,
}

impl RenewMonitor {
    /// Opens a `MONITOR` connection to the Redis at `socket`, authenticated as `auth` (an ACL user)
    /// when given; the error is one line and never contains the password.
    pub fn start(socket: SocketAddr, auth: Option<(&str, &str)>) -> Result<Self, String> {
        let mut stream = TcpStream::connect_timeout(&socket, Duration::from_secs(2))
            .map_err(|e| format!("MONITOR connection to {socket}: {e}"))?;
        if let Some((user, password)) = auth {
            crate::kinds::redis::counters::note_probe_auth(socket);
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
            (count.total, count.followed)
        });
        Ok(RenewMonitor { stream, reader })
    }

    /// Stops following (after `settle`, so commands still in flight are seen) and returns the count.
    pub fn finish(self, settle: Duration) -> (RenewAfterUnlock, Followed) {
        std::thread::sleep(settle);
        let _ = self.stream.shutdown(Shutdown::Both);
        self.reader.join().unwrap_or_else(|_| {
            let none = RenewAfterUnlock {
                renew_calls: 0,
                on_released_keys: 0,
                releases: 0,
            };
            (none, Followed::default())
        })
    }
}

/// The quoted arguments of a `MONITOR` line, unescaped as Redis escapes them (`\"`, `\\`, `\n`,
/// `\r`, `\t`, `\a`, `\b`, `\xHH`).
fn arguments(line: &str) -> Vec<Vec<u8>> {
    let mut args = Vec::new();
    let mut bytes = line.bytes();
    while let Some(b) = bytes.next() {
        if b != b'"' {
            continue;
        }
        let mut arg = Vec::new();
        while let Some(b) = bytes.next() {
            match b {
                b'"' => break,
                b'\\' => match bytes.next() {
                    Some(b'n') => arg.push(b'\n'),
                    Some(b'r') => arg.push(b'\r'),
                    Some(b't') => arg.push(b'\t'),
                    Some(b'a') => arg.push(7),
                    Some(b'b') => arg.push(8),
                    Some(b'x') => {
                        let hex = [bytes.next().unwrap_or(b'0'), bytes.next().unwrap_or(b'0')];
                        let text = std::str::from_utf8(&hex).unwrap_or("00");
                        arg.push(u8::from_str_radix(text, 16).unwrap_or(0));
                    }
                    Some(other) => arg.push(other),
                    None => break,
                },
                other => arg.push(other),
            }
        }
        args.push(arg);
    }
    args
}

/// The count over the lines seen so far.
struct Count {
    roles: HashMap<&'static str, ScriptRole>,
    /// Roles of the other scripts seen as text, by SHA1.
    learned: HashMap<String, ScriptRole>,
    free: HashSet<String>,
    total: RenewAfterUnlock,
    followed: Followed,
}

impl Count {
    fn new() -> Self {
        Count {
            roles: script_shas().into_iter().map(|(r, sha)| (sha, r)).collect(),
            learned: REDISSON_SCRIPTS
                .iter()
                .map(|(sha, role)| ((*sha).to_owned(), *role))
                .collect(),
            free: HashSet::new(),
            total: RenewAfterUnlock {
                renew_calls: 0,
                on_released_keys: 0,
                releases: 0,
            },
            followed: Followed::default(),
        }
    }

    /// Remembers the role of the script `text` (if it has one) and returns its SHA1.
    fn learn(&mut self, text: &str) -> String {
        let sha = redis::Script::new(text).get_hash().to_owned();
        if let Some(role) = role_of_text(text) {
            self.learned.insert(sha.clone(), role);
        }
        sha
    }

    /// One `MONITOR` line: `<time> [<db> <client>] "EVALSHA" "<sha>" "<numkeys>" "<key>"... "<arg>"...`.
    fn line(&mut self, line: &str) {
        if line.contains(" lua]") {
            return;
        }
        let args = arguments(line);
        let Some(command) = args
            .first()
            .map(|c| String::from_utf8_lossy(c).to_lowercase())
        else {
            return;
        };
        if command == "info" {
            return;
        }
        self.followed.commands += 1;
        let [_, script, numkeys, rest @ ..] = args.as_slice() else {
            return;
        };
        if command == "script"
            && rest.is_empty()
            && String::from_utf8_lossy(script).eq_ignore_ascii_case("load")
        {
            // `SCRIPT LOAD <text>`: the pattern above read "LOAD" as the script and the text as
            // `numkeys`.
            self.learn(&String::from_utf8_lossy(numkeys));
            return;
        }
        let sha = match command.as_str() {
            "evalsha" => String::from_utf8_lossy(script).to_lowercase(),
            "eval" => self.learn(&String::from_utf8_lossy(script)),
            _ => return,
        };
        *self.followed.scripts.entry(sha.clone()).or_default() += 1;
        if LIBRARY_RENEW_SCRIPTS.contains(&sha.as_str()) {
            self.followed.renew_calls += 1;
        }
        let Some(role) = self
            .roles
            .get(sha.as_str())
            .or_else(|| self.learned.get(&sha))
            .copied()
        else {
            return;
        };
        let n = String::from_utf8_lossy(numkeys)
            .parse::<usize>()
            .unwrap_or(0)
            .min(rest.len());
        let keys: Vec<String> = rest[..n]
            .iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        match role {
            ScriptRole::Acquire => {
                if let Some(key) = keys.first() {
                    self.free.remove(key);
                }
            }
            ScriptRole::Release => {
                if let Some(key) = keys.first() {
                    self.total.releases += 1;
                    self.free.insert(key.clone());
                }
            }
            ScriptRole::Renew => {
                self.total.renew_calls += 1;
                if !LIBRARY_RENEW_SCRIPTS.contains(&sha.as_str()) {
                    self.followed.renew_calls += 1;
                }
                let stale = keys.iter().filter(|k| self.free.contains(*k)).count();
                self.total.on_released_keys += stale as u64;
            }
        }
    }
}

/// The role of a lock script, by the commands it calls: deleting a key releases (a release may also
/// re-set the TTL of a re-entrant hold), a hash increment or a conditional `SET` takes the lock, and
/// what is left that sets a TTL renews. Redisson's scripts (3.43's acquire, release and `EVAL`led
/// renewal; 3.52's and 4.x's batch renewal) read thus; a script that does none of these has no role.
fn role_of_text(text: &str) -> Option<ScriptRole> {
    let text = text.to_lowercase().replace('"', "'");
    let calls = |command: &str| text.contains(&format!("call('{command}'"));
    if calls("del") || calls("unlink") {
        Some(ScriptRole::Release)
    } else if calls("hincrby") || calls("set") || calls("hset") {
        Some(ScriptRole::Acquire)
    } else if calls("pexpire") || calls("expire") {
        Some(ScriptRole::Renew)
    } else {
        None
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

    /// Redisson 3.43's acquire, `EVAL`led renewal and release (shortened to the commands they call), and
    /// 3.52's batch renewal loaded with `SCRIPT LOAD` and called by `EVALSHA`: each is told by what it
    /// does, and a renewal after the release counts.
    #[test]
    fn library_scripts_are_known_by_what_they_do() {
        let acquire = "if (redis.call('exists', KEYS[1]) == 0) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);";
        let renew = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;";
        let release = "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); return 1; end;";
        let batch = "local result = {} for i = 1, #KEYS, 1 do if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; return result;";
        let batch_sha = redis::Script::new(batch).get_hash().to_owned();
        let mut count = Count::new();
        for line in [
            format!("1.0 [0 127.0.0.1:1] \"EVAL\" \"{acquire}\" \"1\" \"k1\" \"3000\" \"o\"\n"),
            format!("1.0 [0 127.0.0.1:1] \"EVAL\" \"{renew}\" \"1\" \"k1\" \"3000\" \"o\"\n"),
            format!("1.0 [0 127.0.0.1:1] \"SCRIPT\" \"LOAD\" \"{batch}\"\n"),
            format!("1.0 [0 127.0.0.1:1] \"EVAL\" \"{release}\" \"2\" \"k1\" \"c\" \"0\"\n"),
            format!(
                "1.0 [0 127.0.0.1:1] \"EVALSHA\" \"{batch_sha}\" \"1\" \"k1\" \"3000\" \"o\"\n"
            ),
        ] {
            count.line(&line);
        }
        assert_eq!(count.total.releases, 1);
        assert_eq!(count.total.renew_calls, 2);
        assert_eq!(count.total.on_released_keys, 1);
        assert_eq!(count.followed.renew_calls, 2);
        assert_eq!(role_of_text("return redis.call('get', KEYS[1])"), None);
    }

    #[test]
    fn commands_and_scripts_are_followed_by_sha1_of_their_text() {
        let mut count = Count::new();
        let touch = LIBRARY_RENEW_SCRIPTS[0];
        for line in [
            // An EVAL's text, escaped as MONITOR shows it, is hashed as Redis would.
            "1.0 [0 127.0.0.1:1] \"EVAL\" \"return redis.call(\\\"GET\\\", KEYS[1])\\n\" \"1\" \"k\"\n",
            &format!("1.0 [0 127.0.0.1:1] \"evalsha\" \"{touch}\" \"1\" \"k\" \"v\" \"1000\"\n"),
            "1.0 [0 127.0.0.1:1] \"SET\" \"k\" \"v\" \"PX\" \"1000\" \"NX\"\n",
            "1.0 [0 lua] \"get\" \"k\"\n",
            "1.0 [0 127.0.0.1:2] \"INFO\" \"commandstats\"\n",
        ] {
            count.line(line);
        }
        let text = "return redis.call(\"GET\", KEYS[1])\n";
        let eval_sha = redis::Script::new(text).get_hash().to_owned();
        assert_eq!(count.followed.commands, 3);
        assert_eq!(count.followed.renew_calls, 1);
        assert_eq!(
            count.followed.scripts,
            BTreeMap::from([(eval_sha, 1), (touch.to_owned(), 1)])
        );
    }
}
