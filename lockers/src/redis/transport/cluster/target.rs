//! Where a command goes in a cluster: its key's master (a script's first key), any master, or every
//! master (`SCRIPT`, `CONFIG`, `FLUSHALL`, `FLUSHDB`).

use redis::{Cmd, Pipeline};

/// Where a command goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target<'a> {
    /// The master of this key's slot.
    Key(&'a [u8]),
    /// The master of this slot.
    Slot(u16),
    /// Any master.
    Any,
    /// Every master.
    Every,
}

/// Commands that carry no key (their first argument is not one).
const KEYLESS: &[&str] = &[
    "PING", "INFO", "WAIT", "WAITAOF", "CLIENT", "PUBLISH", "CLUSTER", "DBSIZE", "TIME", "MULTI",
    "EXEC", "DISCARD", "ROLE", "MEMORY", "SLOWLOG", "COMMAND", "ECHO", "HELLO",
];
/// Commands that every master must see.
const EVERYWHERE: &[&str] = &["SCRIPT", "CONFIG", "FLUSHALL", "FLUSHDB"];

/// Where `cmd` goes: its key's master, any master, or every master.
pub(super) fn target_of(cmd: &Cmd) -> Target<'_> {
    let mut args = cmd.args_iter().map(|arg| match arg {
        redis::Arg::Simple(bytes) => bytes,
        _ => &b""[..],
    });
    let Some(name) = args.next() else {
        return Target::Any;
    };
    let name = String::from_utf8_lossy(name).to_ascii_uppercase();
    if EVERYWHERE.contains(&name.as_str()) {
        return Target::Every;
    }
    if KEYLESS.contains(&name.as_str()) {
        return Target::Any;
    }
    if matches!(
        name.as_str(),
        "EVAL" | "EVALSHA" | "EVAL_RO" | "EVALSHA_RO" | "FCALL" | "FCALL_RO"
    ) {
        let _script = args.next();
        let keys = args
            .next()
            .and_then(|n| std::str::from_utf8(n).ok()?.parse::<usize>().ok());
        return match (keys, args.next()) {
            (Some(n), Some(key)) if n > 0 => Target::Key(key),
            _ => Target::Any,
        };
    }
    args.next().map_or(Target::Any, Target::Key)
}

/// How many commands of `pipeline` carry a key.
pub(super) fn keyed_commands(pipeline: &Pipeline) -> usize {
    pipeline
        .cmd_iter()
        .filter(|cmd| matches!(target_of(cmd), Target::Key(_)))
        .count()
}

/// Where `pipeline` goes: where its first command with a key goes, else any master.
pub(super) fn target_of_pipeline(pipeline: &Pipeline) -> Target<'_> {
    pipeline
        .cmd_iter()
        .map(target_of)
        .find(|t| matches!(t, Target::Key(_)))
        .unwrap_or(Target::Any)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_go_to_their_keys_master() {
        let mut eval = redis::cmd("EVALSHA");
        eval.arg("abc").arg(2).arg("{x}:lock").arg("{x}:ch").arg(5);
        assert_eq!(target_of(&eval), Target::Key(b"{x}:lock"));
        let mut no_keys = redis::cmd("EVALSHA");
        no_keys.arg("abc").arg(0).arg(5);
        assert_eq!(target_of(&no_keys), Target::Any);
        assert_eq!(
            target_of(redis::cmd("SET").arg("k").arg(1)),
            Target::Key(b"k")
        );
        assert_eq!(target_of(redis::cmd("WAIT").arg(1).arg(0)), Target::Any);
        assert_eq!(
            target_of(redis::cmd("SCRIPT").arg("LOAD").arg("x")),
            Target::Every
        );
        let mut pipeline = redis::pipe();
        pipeline.cmd("PING").cmd("GET").arg("g");
        assert_eq!(target_of_pipeline(&pipeline), Target::Key(b"g"));
    }
}
