//! Waiting for a condition by checking it until a deadline: what a test does instead of sleeping
//! for a fixed time and hoping the server or client got there.

use std::time::{Duration, Instant};

/// How long to wait between two checks.
const INTERVAL: Duration = Duration::from_millis(10);

/// Checks `ready` every 10 ms, blocking the thread, until it holds or `timeout` has passed;
/// returns whether it held. It is checked at least once, and once more at the deadline.
pub fn until(timeout: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if ready() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(INTERVAL);
    }
}

/// Like [`until`], sleeping on the tokio timer between checks so an async test's other tasks
/// keep running.
pub async fn until_async(timeout: Duration, mut ready: impl FnMut() -> bool) -> bool {
    until_awaited(timeout, || std::future::ready(ready())).await
}

/// Like [`until_async`] for a check that itself awaits (asks a server over an async client).
pub async fn until_awaited<F: Future<Output = bool>>(
    timeout: Duration,
    mut ready: impl FnMut() -> F,
) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if ready().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(INTERVAL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gives_up_at_the_deadline() {
        let began = Instant::now();
        assert!(!until(Duration::from_millis(50), || false));
        assert!(began.elapsed() >= Duration::from_millis(50));
    }

    #[test]
    fn returns_once_ready() {
        let mut checks = 0;
        assert!(until(Duration::from_secs(5), || {
            checks += 1;
            checks == 3
        }));
        assert_eq!(checks, 3);
    }
}
