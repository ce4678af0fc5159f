"""py-redis-lock: python-redis-lock's `Lock` with `auto_renewal=True`, the guard-thread pattern.

The library keeps the lock at `lock:<name>` (SET NX EX) and, with auto-renewal, starts one thread per
held lock that extends it every 2/3 of `expire`. Expiry, wait and renewal times are whole seconds in this
library (sub-second values are rounded up here; a sub-second wait cannot be honoured). Waiters block on
BLPOP of a signal list that release pushes to (server wake-up). Without auto-renewal the library refuses
a wait longer than `expire` ("Timeout (5) cannot be greater than expire (1)"); such a wait is the
adapter's loop of the library's waits, each at most `expire` long, until the whole wait has passed (a
lock that expires rather than being released pushes no signal, so a waiter tries again when its wait of
at most `expire` ends). That loop is the adapter's, not the library's.

Observed: the renewal thread calls `Lock.extend`; a subclass times each call and reports `renewed` or
`renew_failed`. When an extend fails the library's thread dies with the exception and tells the holder
nothing, so no `lost` is sent (the holder learns at its deadline, as a python-redis-lock user does).
"""

from importlib.metadata import version
import math
import threading
import time

import redis
import redis_lock

from lockbench_adapter import Peer, Refused, now, serve, whole_seconds


class StampingRedis(redis.Redis):
    """The redis-py client, noting (per thread) when each SET was sent: the last one is the one that won."""

    stamp = threading.local()

    def set(self, *args, **kwargs):
        self.stamp.t = now()
        return super().set(*args, **kwargs)


class ObservedLock(redis_lock.Lock):
    """The library's Lock, reporting each extend its renewal thread makes."""

    lease = None

    def extend(self, expire=None):
        sent = now()
        try:
            super().extend(expire)
        except Exception as e:
            if self.lease is not None:
                self.lease.renew_failed(f"{type(e).__name__}: {e}")
            raise
        if self.lease is not None:
            self.lease.renewed(sent=sent, done=now(), ttl_ms=(expire or self._expire) * 1000)


class RedisLock(Peer):
    ADAPTER = "py-redis-lock"
    LIBRARY = "python-redis-lock"
    VERSION = version("python-redis-lock")
    CAPABILITIES = {"reentrant": False, "fencing": False, "auto_renew": True, "fixed_lease": True,
                    "wait_notify": True, "lost_signal": False, "hold_identity": True, "renew_events": True,
                    "min_ttl_ms": 1000, "ttl_granularity_ms": 1000}

    def setup(self, config):
        self.client = StampingRedis.from_url(config["servers"][0])
        self.client.ping()

    def acquire(self, key, wait, mode, ttl_ms, owner, lease):
        lock = ObservedLock(self.client, key, expire=whole_seconds(ttl_ms),
                            auto_renewal=(mode == "watchdog"))
        lock.lease = lease
        if not self.take(lock, wait, mode, whole_seconds(ttl_ms)):
            raise Refused("timeout", f"{key} is held")
        lease.sent = self.client.stamp.t
        return lock, None

    @staticmethod
    def take(lock, wait, mode, expire):
        """The library's acquire; without auto-renewal, a wait longer than `expire` (which the library
        refuses) is the adapter's loop of waits of at most `expire` until the whole wait has passed."""
        if wait is None:
            return lock.acquire(blocking=False)
        wait = max(1, whole_seconds(wait * 1000))
        if mode == "watchdog":
            return lock.acquire(blocking=True, timeout=wait)
        give_up = time.monotonic() + wait
        while True:
            left = math.ceil(give_up - time.monotonic())
            if lock.acquire(blocking=True, timeout=max(1, min(left, expire))):
                return True
            if time.monotonic() >= give_up:
                return False

    def release(self, lock):
        try:
            lock.release()
        except redis_lock.NotAcquired as e:
            raise Refused("not_held", str(e))

    def close(self):
        self.client.close()


if __name__ == "__main__":
    serve(RedisLock)
