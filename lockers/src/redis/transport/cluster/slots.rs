//! Hash slots: the slot a key hashes to, a batch's keys grouped by slot, and the slot ranges a
//! `CLUSTER SLOTS` answer assigns to masters.

use redis::Value;

/// The number of hash slots.
pub(crate) const SLOTS: u16 = 16384;

/// The hash slot of `key`: CRC16 (XModem) of the key, or of the text between its first `{` and the
/// next `}` when that is not empty, modulo 16384.
pub(crate) fn slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    crc16(tagged.unwrap_or(key)) % SLOTS
}

/// CRC16-CCITT (XModem): polynomial 0x1021, initial value 0, as the Redis Cluster specification asks.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Indexes into `keys` grouped by slot, each group in the order given, groups in order of their first
/// key: the script calls a batch of locks needs in a cluster (one per slot). Outside a cluster
/// (`clustered` false) one group holds every index.
pub(crate) fn by_slot<K: AsRef<[u8]>>(keys: &[K], clustered: bool) -> Vec<Vec<usize>> {
    if !clustered {
        return vec![(0..keys.len()).collect()];
    }
    let mut groups: Vec<(u16, Vec<usize>)> = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let slot = slot(key.as_ref());
        match groups.iter_mut().find(|(s, _)| *s == slot) {
            Some((_, group)) => group.push(i),
            None => groups.push((slot, vec![i])),
        }
    }
    groups.into_iter().map(|(_, group)| group).collect()
}

/// How many slots `ranges` cover.
pub(super) fn covered(ranges: &[(u16, u16, String)]) -> usize {
    ranges
        .iter()
        .map(|(first, last, _)| usize::from(last.saturating_sub(*first)) + 1)
        .sum()
}

/// Reads a `CLUSTER SLOTS` answer: per range its first and last slot and its master's `host:port`
/// (an empty host means the node asked, `host`).
pub(super) fn parse_slots(answer: &Value, host: &str) -> Option<Vec<(u16, u16, String)>> {
    let Value::Array(entries) = answer else {
        return None;
    };
    let int = |v: &Value| match v {
        Value::Int(n) => u16::try_from(*n).ok(),
        _ => None,
    };
    let text = |v: &Value| match v {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    entries
        .iter()
        .map(|entry| {
            let Value::Array(fields) = entry else {
                return None;
            };
            let (first, last) = (int(fields.first()?)?, int(fields.get(1)?)?);
            let Value::Array(master) = fields.get(2)? else {
                return None;
            };
            let ip = text(master.first()?)?;
            let port = int(master.get(1)?)?;
            let ip = if ip.is_empty() || ip == "?" {
                host.to_owned()
            } else {
                ip
            };
            Some((first, last, format!("{ip}:{port}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_cluster_specification() {
        // The specification's example: CRC16 of "123456789" is 0x31C3.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"{user1000}.followers"));
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        // An empty tag is no tag: the whole key is hashed.
        assert_eq!(slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
    }

    #[test]
    fn batches_split_by_slot_in_a_cluster_only() {
        let keys = ["{a}:1", "{b}:1", "{a}:2", "{c}"];
        assert_eq!(by_slot(&keys, false), vec![vec![0, 1, 2, 3]]);
        assert_eq!(by_slot(&keys, true), vec![vec![0, 2], vec![1], vec![3]]);
    }

    #[test]
    fn reads_cluster_slots() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let answer = Value::Array(vec![
            Value::Array(vec![
                Value::Int(0),
                Value::Int(5460),
                Value::Array(vec![bulk("127.0.0.1"), Value::Int(7000), bulk("id0")]),
                Value::Array(vec![bulk("127.0.0.1"), Value::Int(7003), bulk("id3")]),
            ]),
            Value::Array(vec![
                Value::Int(5461),
                Value::Int(16383),
                Value::Array(vec![bulk(""), Value::Int(7001), bulk("id1")]),
            ]),
        ]);
        let ranges = parse_slots(&answer, "10.1.1.1").expect("parsed");
        assert_eq!(
            ranges,
            vec![
                (0, 5460, "127.0.0.1:7000".to_owned()),
                (5461, 16383, "10.1.1.1:7001".to_owned())
            ]
        );
        assert_eq!(covered(&ranges), 16384);
    }
}
