//! What batched renewal ([`crate::batch_renewal`]) needs of a `redis-watchdog` lock: its
//! [`BatchTarget`], the server key and owner its chunk's script call names, kept inline in the lock's
//! schedule entry so that building a call reads them side by side instead of from two allocations per
//! lock.

/// One lock to renew: its server key and owner, as the chunk renewal function needs them. They sit
/// inline in the lock's entry when they fit ([`INLINE`] bytes together), so building a chunk's call
/// reads them side by side instead of from two allocations per lock.
#[derive(Debug, Clone)]
pub(crate) struct BatchTarget {
    /// Where the owner starts in `text`.
    key_len: usize,
    text: Text,
}

/// Bytes of key and owner kept inline in a [`BatchTarget`] (their length is kept in a `u8`).
const INLINE: usize = 94;
const _: () = assert!(INLINE <= u8::MAX as usize);

#[derive(Debug, Clone)]
enum Text {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl BatchTarget {
    /// The lock `key` on the server, held by `owner`.
    pub(crate) fn new(key: &str, owner: &str) -> Self {
        let len = key.len() + owner.len();
        let text = match u8::try_from(len) {
            Ok(short) if len <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..key.len()].copy_from_slice(key.as_bytes());
                bytes[key.len()..len].copy_from_slice(owner.as_bytes());
                Text::Inline { len: short, bytes }
            }
            _ => Text::Heap([key.as_bytes(), owner.as_bytes()].concat().into()),
        };
        BatchTarget {
            key_len: key.len(),
            text,
        }
    }

    fn text(&self) -> &[u8] {
        match &self.text {
            Text::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Text::Heap(text) => text,
        }
    }

    /// The lock key on the server.
    pub(crate) fn key(&self) -> &[u8] {
        &self.text()[..self.key_len]
    }

    /// The owner field.
    pub(crate) fn owner(&self) -> &[u8] {
        &self.text()[self.key_len..]
    }
}
