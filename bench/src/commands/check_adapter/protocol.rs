//! The protocol checks of `lockbench check-adapter`, on raw lines to one adapter process (its stderr in
//! a log): `hello`'s fields, the id, the version it loaded and the capabilities it declares against
//! the manifest; concurrent requests answered in any order; one reply for every id; only protocol
//! lines on stdout; a broken request line survived.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use lockers::Renewal;
use lockers::peer::catalog::{PeerSpec, Reentry};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::row::Row;

/// How long `hello` may take (the parent's start timeout).
const HELLO_TIMEOUT: Duration = Duration::from_secs(30);
/// How long any other request may take here.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// One adapter process spoken to line by line.
struct Wire {
    stdin: tokio::process::ChildStdin,
    lines: mpsc::UnboundedReceiver<String>,
    /// Replies counted per id; lines that were not protocol.
    replies: HashMap<u64, u32>,
    garbage: Vec<String>,
    _child: tokio::process::Child,
}

impl Wire {
    fn start(spec: &PeerSpec, log: &Path) -> Result<Wire, String> {
        let command = spec.command().map_err(|e| e.to_string())?;
        let log_file = std::fs::File::create(log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let mut child = tokio::process::Command::new(&command.program)
            .args(&command.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", command.program.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("no stdio pipes".into());
        };
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Ok(Wire {
            stdin,
            lines,
            replies: HashMap::new(),
            garbage: Vec::new(),
            _child: child,
        })
    }

    async fn send(&mut self, line: &str) {
        let line = format!("{line}\n");
        let _ = self.stdin.write_all(line.as_bytes()).await;
        let _ = self.stdin.flush().await;
    }

    /// Reads lines until every id of `ids` has a reply or `limit` passes; the replies in the order
    /// they came (events are skipped).
    async fn replies_to(&mut self, ids: &[u64], limit: Duration) -> Vec<(u64, Value)> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut got: Vec<(u64, Value)> = Vec::new();
        while !ids.iter().all(|id| got.iter().any(|(g, _)| g == id)) {
            let Ok(Some(line)) = tokio::time::timeout_at(deadline, self.lines.recv()).await else {
                break;
            };
            match serde_json::from_str::<Value>(&line) {
                Ok(Value::Object(obj)) if obj.contains_key("ev") => {}
                Ok(value @ Value::Object(_)) if value.get("ok").is_some_and(Value::is_boolean) => {
                    match value.get("id").and_then(Value::as_u64) {
                        Some(id) => {
                            *self.replies.entry(id).or_default() += 1;
                            got.push((id, value));
                        }
                        None => self.garbage.push(line),
                    }
                }
                _ => self.garbage.push(line),
            }
        }
        got
    }

    /// The reply to `id` (sent as `request`), within `limit`.
    async fn ask(&mut self, id: u64, request: Value, limit: Duration) -> Option<Value> {
        self.send(&request.to_string()).await;
        let replies = self.replies_to(&[id], limit).await;
        replies.into_iter().find(|(i, _)| *i == id).map(|(_, v)| v)
    }
}

/// Who asks: the client a request names, and the owner within it.
#[derive(Debug, Clone, Copy)]
struct Asker {
    client: u32,
    owner: &'static str,
}

/// The first client's owner, the one most checks ask as.
const FIRST: Asker = Asker {
    client: 0,
    owner: "a",
};

/// The acquire request of the checks: a fixed lease where the adapter takes one (a lock left behind
/// expires), else a watchdog lease.
fn acquire(
    id: u64,
    key: &str,
    asker: Asker,
    wait_ms: Option<u64>,
    spec: &PeerSpec,
    ttl: Duration,
) -> Value {
    let (mode, ttl_ms) = if spec.capabilities.fixed_lease {
        ("fixed", 5_000)
    } else {
        ("watchdog", ttl.as_millis() as u64)
    };
    json!({"id": id, "op": "acquire", "client": asker.client, "key": key, "wait_ms": wait_ms,
           "owner": asker.owner, "lease": {"mode": mode, "ttl_ms": ttl_ms}})
}

fn release(id: u64, client: u32, lease: &str) -> Value {
    json!({"id": id, "op": "release", "client": client, "lease": lease})
}

fn hello(id: u64, client: u32, config: &Value) -> Value {
    json!({"id": id, "op": "hello", "client": client, "protocol": 1, "config": config})
}

fn lease_of(reply: &Value) -> Option<String> {
    (reply.get("ok") == Some(&Value::Bool(true)))
        .then(|| {
            reply
                .get("lease")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .flatten()
}

/// Runs the protocol checks against one process of the adapter, its stderr in `log`.
pub(crate) async fn check(
    spec: &PeerSpec,
    servers: &[String],
    renewal: Renewal,
    log: &Path,
) -> Vec<Row> {
    let mut wire = match Wire::start(spec, log) {
        Ok(wire) => wire,
        Err(why) => return vec![Row::judged("hello", "answered", why, false)],
    };
    let mut config = serde_json::Map::new();
    config.insert("servers".into(), servers.into());
    for (name, value) in spec.hello_settings(&[], renewal) {
        config.insert(name, value.into());
    }
    let config = Value::Object(config);
    let Some(hello) = wire.ask(1, self::hello(1, 0, &config), HELLO_TIMEOUT).await else {
        let why = format!("no reply within {HELLO_TIMEOUT:?} (log: {})", log.display());
        return vec![Row::judged("hello", "answered", why, false)];
    };
    let mut rows = hello_rows(spec, &hello, log);
    if hello.get("ok") != Some(&Value::Bool(true)) {
        return rows;
    }
    rows.push(concurrency(&mut wire, spec, &config, renewal.ttl).await);
    rows.push(every_id(&mut wire, spec, renewal.ttl).await);
    rows.push(broken_line(&mut wire).await);
    let garbage = std::mem::take(&mut wire.garbage);
    rows.push(Row::judged(
        "only protocol lines on stdout",
        "yes",
        garbage
            .first()
            .map_or_else(|| "yes".to_owned(), |line| format!("also wrote {line:?}")),
        garbage.is_empty(),
    ));
    let _ = wire
        .ask(99, json!({"id": 99, "op": "close"}), Duration::from_secs(1))
        .await;
    rows
}

/// `hello`'s fields, the id, the version and the capabilities against the manifest's.
fn hello_rows(spec: &PeerSpec, hello: &Value, log: &Path) -> Vec<Row> {
    if hello.get("ok") != Some(&Value::Bool(true)) {
        let error = hello.get("error").map(Value::to_string).unwrap_or_default();
        let why = format!("refused: {error} (log: {})", log.display());
        return vec![Row::judged("hello", "answered", why, false)];
    }
    let text = |name: &str| hello.get(name).and_then(Value::as_str).unwrap_or_default();
    let mut missing: Vec<&str> = ["adapter", "library", "version"]
        .into_iter()
        .filter(|f| text(f).is_empty())
        .collect();
    if hello.get("protocol").and_then(Value::as_u64) != Some(1) {
        missing.push("protocol: 1");
    }
    let caps = hello.get("capabilities").and_then(Value::as_object);
    if caps.is_none() {
        missing.push("capabilities");
    }
    let observed = if missing.is_empty() {
        "protocol, adapter, library, version, capabilities".to_owned()
    } else {
        format!("missing {}", missing.join(", "))
    };
    let empty = serde_json::Map::new();
    let caps = caps.unwrap_or(&empty);
    let claimed = &spec.capabilities;
    let flag = |name: &str| caps.get(name).and_then(Value::as_bool).unwrap_or(false);
    let ms = |name: &str| caps.get(name).and_then(Value::as_u64).unwrap_or(1);
    let mut differ = Vec::new();
    for (name, claim) in [
        ("reentrant", claimed.reentrant),
        ("fencing", claimed.fencing),
        ("auto_renew", claimed.auto_renew),
        ("fixed_lease", claimed.fixed_lease),
        ("wait_notify", claimed.wait_notify),
        ("lost_signal", claimed.lost_signal),
        ("hold_identity", claimed.hold_identity),
        ("starve", spec.starve_library),
    ] {
        if flag(name) != claim {
            differ.push(format!("{name}: hello says {}", flag(name)));
        }
    }
    for (name, claim) in [
        ("min_ttl_ms", claimed.min_ttl),
        ("ttl_granularity_ms", claimed.ttl_granularity),
    ] {
        if u128::from(ms(name)) != claim.as_millis() {
            differ.push(format!("{name}: hello says {}", ms(name)));
        }
    }
    if spec.serves_many_clients && hello.get("multi_client") != Some(&Value::Bool(true)) {
        differ.push("multi_client: hello does not say it".into());
    }
    vec![
        Row::judged("hello", "answered", observed, missing.is_empty()),
        Row::judged(
            "id",
            spec.id.clone(),
            text("adapter"),
            text("adapter") == spec.id,
        ),
        Row::judged(
            "version loaded",
            spec.version.clone(),
            text("version"),
            text("version") == spec.version,
        ),
        Row::judged(
            "capabilities in hello",
            "as the manifest",
            if differ.is_empty() {
                "as the manifest".to_owned()
            } else {
                differ.join("; ")
            },
            differ.is_empty(),
        ),
    ]
}

/// Who waits behind the first client's hold in [`concurrency`]: a second client of the process where
/// the manifest says it serves many (another library client waits in every library), else another
/// owner of the first client, which waits only where the manifest says a same-owner acquire does (for
/// `reentrant = "shared"` the library may take every acquire of one client for its owner's).
fn waiter(spec: &PeerSpec) -> Option<Asker> {
    if spec.serves_many_clients {
        Some(Asker {
            client: 1,
            owner: "b",
        })
    } else {
        (spec.reentry != Reentry::Shared).then_some(Asker {
            client: 0,
            owner: "b",
        })
    }
}

/// A ping is answered while an acquire waits for a held lock, and the waiter gets the lock once it is
/// released.
async fn concurrency(wire: &mut Wire, spec: &PeerSpec, config: &Value, ttl: Duration) -> Row {
    const CHECK: &str = "concurrent requests, any order";
    let claimed = "a ping answered while an acquire waits";
    let fail = |why: String| Row::judged(CHECK, claimed, why, false);
    let Some(waiter) = waiter(spec) else {
        return Row::not_tested(
            CHECK,
            claimed,
            "one client per process, whose acquires never wait on each other (reentrant = \"shared\")",
        );
    };
    if waiter.client != FIRST.client {
        let second = wire
            .ask(9, hello(9, waiter.client, config), HELLO_TIMEOUT)
            .await;
        if second.as_ref().and_then(|v| v.get("ok")) != Some(&Value::Bool(true)) {
            return fail(format!(
                "a second client's hello failed: {}",
                second.map_or("no reply".into(), |v| v.to_string())
            ));
        }
    }
    let key = format!("check-adapter:concurrent:{:08x}", rand::random::<u32>());
    let Some(first) = wire
        .ask(10, acquire(10, &key, FIRST, None, spec, ttl), REPLY_TIMEOUT)
        .await
    else {
        return fail("no reply to a first acquire".into());
    };
    let Some(held) = lease_of(&first) else {
        return fail(format!("a first acquire of a free lock failed: {first}"));
    };
    wire.send(&acquire(11, &key, waiter, Some(4_000), spec, ttl).to_string())
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let Some(pong) = wire
        .ask(12, json!({"id": 12, "op": "ping", "t": 0}), REPLY_TIMEOUT)
        .await
    else {
        return fail("no reply to a ping while an acquire waited".into());
    };
    let early = wire.replies.get(&11).copied().unwrap_or(0) > 0;
    wire.send(&release(13, FIRST.client, &held).to_string())
        .await;
    let replies = wire
        .replies_to(&[11, 13], REPLY_TIMEOUT + Duration::from_secs(4))
        .await;
    let waited = replies
        .iter()
        .find(|(id, _)| *id == 11)
        .map(|(_, v)| v.clone());
    if let Some(lease) = waited.as_ref().and_then(lease_of) {
        let _ = wire
            .ask(14, release(14, waiter.client, &lease), REPLY_TIMEOUT)
            .await;
    }
    match (
        early,
        pong.get("t").and_then(Value::as_i64),
        waited.as_ref().and_then(lease_of),
    ) {
        (true, _, _) => {
            fail("the waiting acquire was answered before the lock was released".into())
        }
        (_, None, _) => fail(format!("a ping reply without an integer t: {pong}")),
        (_, _, None) => fail(format!(
            "the waiter did not get the released lock: {}",
            waited.map_or("no reply".into(), |v| v.to_string())
        )),
        _ => Row::judged(
            CHECK,
            claimed,
            if waiter.client == FIRST.client {
                "a ping answered while another owner's acquire waited; it got the lock after the release"
            } else {
                "a ping answered while a second client's acquire waited; it got the lock after the release"
            },
            true,
        ),
    }
}

/// A burst of pings, acquires and releases: each id answered exactly once.
async fn every_id(wire: &mut Wire, spec: &PeerSpec, ttl: Duration) -> Row {
    const CHECK: &str = "a reply for every id";
    let prefix = format!("check-adapter:burst:{:08x}", rand::random::<u32>());
    let mut ids: Vec<u64> = Vec::new();
    for id in 20..40u64 {
        let request = if id % 4 == 0 {
            acquire(id, &format!("{prefix}:{id}"), FIRST, None, spec, ttl)
        } else {
            json!({"id": id, "op": "ping", "t": 0})
        };
        wire.send(&request.to_string()).await;
        ids.push(id);
    }
    let replies = wire.replies_to(&ids, REPLY_TIMEOUT).await;
    let mut releases = Vec::new();
    for (n, (_, reply)) in replies.iter().filter(|(id, _)| id % 4 == 0).enumerate() {
        if let Some(lease) = lease_of(reply) {
            let id = 40 + n as u64;
            wire.send(&release(id, FIRST.client, &lease).to_string())
                .await;
            releases.push(id);
        }
    }
    wire.replies_to(&releases, REPLY_TIMEOUT).await;
    ids.extend(&releases);
    // Late duplicates, if any: read what comes within 200 ms (waiting for an id never sent).
    wire.replies_to(&[u64::MAX], Duration::from_millis(200))
        .await;
    let missing = ids
        .iter()
        .filter(|id| !wire.replies.contains_key(id))
        .count();
    let twice = wire.replies.values().filter(|n| **n > 1).count();
    let unknown = wire.replies.keys().filter(|id| **id > 99).count();
    Row::judged(
        CHECK,
        "exactly one reply per id",
        format!(
            "{} requests: {missing} unanswered, {twice} answered more than once, {unknown} replies to ids never sent",
            ids.len()
        ),
        missing == 0 && twice == 0 && unknown == 0,
    )
}

/// A line that is not a request neither ends the adapter nor stops it answering.
async fn broken_line(wire: &mut Wire) -> Row {
    const CHECK: &str = "a broken line survived";
    wire.send("this is not a request {").await;
    let pong = wire
        .ask(50, json!({"id": 50, "op": "ping", "t": 0}), REPLY_TIMEOUT)
        .await;
    Row::judged(
        CHECK,
        "skipped, the next request answered",
        if pong.is_some() {
            "the next request was answered"
        } else {
            "no reply after it (did the adapter exit?)"
        },
        pong.is_some(),
    )
}
