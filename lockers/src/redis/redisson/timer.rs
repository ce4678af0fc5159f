//! Redisson's timer (`ServiceManager.initTimer`: one Netty `HashedWheelTimer` per client). Every
//! renewal timeout, retry pause and response timeout of a Redisson client waits on it, and the wheel
//! fires a wait only at the end of the tick its deadline falls in: each fires up to a tick late, half a
//! tick on average. Over a renewal that fails after its retries (five response timeouts, four pauses,
//! then the next renewal) the lateness adds up to about ten half-ticks, which decides on which side of
//! the expiry the next renewal lands in `renewal-error` (docs/findings/redisson.md).

use std::time::{Duration, Instant};

/// The smallest tick modelled: Netty refuses a zero tick, and Redisson's formula gives 10 ms or more
/// in 3.52 (in 3.43 it can round down to 0 for a `retryInterval` or `timeout` ending in 01).
const LEAST_TICK: Duration = Duration::from_millis(1);

/// One client's timer: ticks of `tick` from its start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RedissonTimer {
    origin: Instant,
    tick: Duration,
}

impl RedissonTimer {
    /// A timer started now, ticking every `tick`.
    pub(crate) fn start(tick: Duration) -> Self {
        RedissonTimer {
            origin: Instant::now(),
            tick: tick.max(LEAST_TICK),
        }
    }

    /// When a wait due at `deadline` fires: the end of the tick the deadline falls in.
    pub(crate) fn fires_at(&self, deadline: Instant) -> Instant {
        let since = deadline.saturating_duration_since(self.origin).as_nanos();
        let tick = self.tick.as_nanos();
        let end = (since / tick + 1).saturating_mul(tick);
        self.origin + Duration::from_nanos(u64::try_from(end).unwrap_or(u64::MAX))
    }

    /// When a wait of `wait` started now fires.
    pub(crate) fn after(&self, wait: Duration) -> Instant {
        self.fires_at(Instant::now() + wait)
    }

    /// Waits `wait` on this timer.
    pub(crate) async fn sleep(&self, wait: Duration) {
        tokio::time::sleep_until(self.after(wait).into()).await;
    }
}

/// The tick Redisson sizes its timer with, from `first_pause` (3.52+: `retryDelay.calcDelay(0)`; up to
/// 3.4x: `retryInterval`) and `timeout`, in whole milliseconds: the smaller of the two, `m`. Not a
/// multiple of 100: half its last two digits (3.52+: at least 10 ms); exactly 100: 50; another multiple
/// of 100: 100.
pub(crate) fn tick_for(first_pause: Duration, timeout: Duration, at_least_10ms: bool) -> Duration {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let least = ms(first_pause).min(ms(timeout));
    let tick = if least == 0 {
        10
    } else if !least.is_multiple_of(100) {
        let half = (least % 100) / 2;
        if at_least_10ms { half.max(10) } else { half }
    } else if least == 100 {
        50
    } else {
        100
    };
    Duration::from_millis(tick)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_wait_fires_at_the_end_of_the_tick_its_deadline_falls_in() {
        let timer = RedissonTimer::start(10 * MS);
        let o = timer.origin;
        assert_eq!(timer.fires_at(o + 3 * MS), o + 10 * MS);
        assert_eq!(timer.fires_at(o + 10 * MS), o + 20 * MS);
        assert_eq!(timer.fires_at(o + 19 * MS), o + 20 * MS);
        // A deadline already past fires at the end of the current tick.
        assert_eq!(timer.fires_at(o), o + 10 * MS);
    }

    #[test]
    fn the_tick_follows_redissons_formula() {
        // Redisson's defaults: 3.43 (retryInterval 1.5 s, timeout 3 s) ticks every 100 ms; 3.52's
        // first pause of 500-1000 ms gives 10-49 ms (25 ms at 750 ms).
        assert_eq!(tick_for(1500 * MS, 3000 * MS, false), 100 * MS);
        assert_eq!(tick_for(750 * MS, 3000 * MS, true), 25 * MS);
        assert_eq!(tick_for(510 * MS, 3000 * MS, true), 10 * MS);
        // lockbench's scaling at a 3 s TTL: retryInterval 50 ms, timeout 150 ms.
        assert_eq!(tick_for(50 * MS, 150 * MS, false), 25 * MS);
        assert_eq!(tick_for(25 * MS, 150 * MS, true), 12 * MS);
        assert_eq!(tick_for(100 * MS, 3000 * MS, false), 50 * MS);
        assert_eq!(tick_for(Duration::ZERO, 3000 * MS, true), 10 * MS);
    }
}
