//! The adapter protocol's messages (adapters/PROTOCOL.md): building request lines and parsing what an
//! adapter writes back. JSON lines; nothing here does I/O.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::lease::LeaseMode;

/// The protocol version this side speaks.
pub(crate) const VERSION: u64 = 1;

/// An error reply: its kind (`timeout`, `not_held`, `unsupported`, `backend`, `config`) and message.
#[derive(Debug, Clone)]
pub(crate) struct WireError {
    pub(crate) kind: String,
    pub(crate) message: String,
}

/// One line from an adapter.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// The answer to request `id`: its fields on success, or the error.
    Reply {
        id: u64,
        body: Result<Map<String, Value>, WireError>,
    },
    /// An unsolicited event about a lease.
    Event(PeerEvent),
}

/// An event an adapter reports, timestamps on its own monotonic clock (nanoseconds).
#[derive(Debug)]
pub(crate) enum PeerEvent {
    Renewed {
        lease: String,
        scheduled: Option<i64>,
        sent: i64,
        done: i64,
        remaining: Option<Duration>,
        ttl: Duration,
    },
    RenewFailed {
        lease: String,
        error: String,
    },
    Lost {
        lease: String,
        reason: String,
        detail: String,
    },
}

/// `hello` of client `client`: the protocol version and the client's settings.
pub(crate) fn hello(id: u64, client: u32, config: &Map<String, Value>) -> String {
    json!({"id": id, "op": "hello", "client": client, "protocol": VERSION, "config": config})
        .to_string()
}

/// `ping`: the parent's clock, for the clock sync.
pub(crate) fn ping(id: u64, parent_ns: i64) -> String {
    json!({"id": id, "op": "ping", "t": parent_ns}).to_string()
}

/// `acquire`.
pub(crate) fn acquire(
    id: u64,
    client: u32,
    key: &str,
    wait: Option<Duration>,
    lease: LeaseMode,
    watchdog_ttl: Duration,
    owner: &str,
) -> String {
    let lease = match lease {
        LeaseMode::Watchdog => json!({"mode": "watchdog", "ttl_ms": millis(watchdog_ttl)}),
        LeaseMode::Fixed(d) => json!({"mode": "fixed", "ttl_ms": millis(d)}),
    };
    json!({
        "id": id, "op": "acquire", "client": client, "key": key, "wait_ms": wait.map(millis), "lease": lease, "owner": owner,
    })
    .to_string()
}

/// `release` of a lease client `client` holds.
pub(crate) fn release(id: u64, client: u32, lease: &str) -> String {
    json!({"id": id, "op": "release", "client": client, "lease": lease}).to_string()
}

/// `starve` of client `client`: block its library's threads for `hold`.
pub(crate) fn starve(id: u64, client: u32, hold: Duration) -> String {
    json!({"id": id, "op": "starve", "client": client, "for_ms": hold.as_millis() as u64})
        .to_string()
}

/// `close` of one client (`Some`), or of the whole process (`None`: the adapter exits).
pub(crate) fn close(id: u64, client: Option<u32>) -> String {
    match client {
        Some(client) => json!({"id": id, "op": "close", "client": client}),
        None => json!({"id": id, "op": "close"}),
    }
    .to_string()
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn duration_ms(v: Option<&Value>) -> Option<Duration> {
    v.and_then(Value::as_f64)
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map(|ms| Duration::from_secs_f64(ms / 1e3))
}

fn str_field(obj: &Map<String, Value>, name: &str) -> Result<String, String> {
    obj.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("missing string field {name:?}"))
}

fn int_field(obj: &Map<String, Value>, name: &str) -> Result<i64, String> {
    obj.get(name)
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("missing integer field {name:?}"))
}

/// Parses one line; an error names what is wrong with it.
pub(crate) fn parse(line: &str) -> Result<Incoming, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    let Value::Object(obj) = value else {
        return Err("not a JSON object".into());
    };
    if let Some(ev) = obj.get("ev").and_then(Value::as_str) {
        let lease = str_field(&obj, "lease")?;
        let event = match ev {
            "renewed" => PeerEvent::Renewed {
                scheduled: obj.get("scheduled").and_then(Value::as_i64),
                sent: int_field(&obj, "sent")?,
                done: int_field(&obj, "done")?,
                remaining: duration_ms(obj.get("remaining_ms")),
                ttl: duration_ms(obj.get("ttl_ms")).ok_or("missing number field \"ttl_ms\"")?,
                lease,
            },
            "renew_failed" => PeerEvent::RenewFailed {
                error: str_field(&obj, "error").unwrap_or_default(),
                lease,
            },
            "lost" => PeerEvent::Lost {
                reason: str_field(&obj, "reason")?,
                detail: str_field(&obj, "detail").unwrap_or_default(),
                lease,
            },
            other => return Err(format!("unknown event {other:?}")),
        };
        return Ok(Incoming::Event(event));
    }
    let id = obj
        .get("id")
        .and_then(Value::as_u64)
        .ok_or("neither an event (\"ev\") nor a reply (\"id\")")?;
    let body = match obj.get("ok").and_then(Value::as_bool) {
        Some(true) => Ok(obj),
        Some(false) => {
            let err = obj.get("error").and_then(Value::as_object);
            let field = |name| {
                err.and_then(|e| e.get(name))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            Err(WireError {
                kind: field("kind"),
                message: field("message"),
            })
        }
        None => return Err(format!("reply {id} has no boolean \"ok\"")),
    };
    Ok(Incoming::Reply { id, body })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_replies_and_events() {
        let ok = parse(r#"{"id":3,"ok":true,"lease":"L1","token":null}"#).unwrap();
        assert!(matches!(ok, Incoming::Reply { id: 3, body: Ok(_) }));
        let err =
            parse(r#"{"id":4,"ok":false,"error":{"kind":"not_held","message":"x"}}"#).unwrap();
        match err {
            Incoming::Reply { body: Err(e), .. } => assert_eq!(e.kind, "not_held"),
            other => panic!("{other:?}"),
        }
        let ev =
            r#"{"ev":"renewed","lease":"L1","sent":10,"done":20,"ttl_ms":600,"remaining_ms":null}"#;
        assert!(matches!(
            parse(ev).unwrap(),
            Incoming::Event(PeerEvent::Renewed {
                sent: 10,
                done: 20,
                remaining: None,
                ..
            })
        ));
        for bad in [
            "",
            "[]",
            "{}",
            r#"{"id":1}"#,
            r#"{"ev":"renewed","lease":"L"}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
