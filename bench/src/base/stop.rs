//! `StopSignal`: the one flag that ends a case (deadline, cycle count, Ctrl-C), cheap to poll on the
//! hot path and awaitable where a worker waits.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Set once; every clone sees it.
#[derive(Debug, Clone, Default)]
pub(crate) struct StopSignal(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    set: AtomicBool,
    notify: Notify,
}

impl StopSignal {
    /// A signal not yet set.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Sets it and wakes every waiter.
    pub(crate) fn set(&self) {
        self.0.set.store(true, Ordering::Release);
        self.0.notify.notify_waiters();
    }

    /// Whether it is set (one atomic load).
    #[inline]
    pub(crate) fn is_set(&self) -> bool {
        self.0.set.load(Ordering::Acquire)
    }

    /// Resolves once it is set.
    pub(crate) async fn wait(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_wake_when_set() {
        let stop = StopSignal::new();
        let waiter = tokio::spawn({
            let stop = stop.clone();
            async move { stop.wait().await }
        });
        tokio::task::yield_now().await;
        assert!(!stop.is_set());
        stop.set();
        tokio::time::timeout(std::time::Duration::from_secs(1), waiter)
            .await
            .expect("woken")
            .expect("joined");
        // Already set: returns at once.
        stop.wait().await;
    }
}
