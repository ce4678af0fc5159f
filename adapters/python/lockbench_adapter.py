"""The lockbench adapter protocol (adapters/PROTOCOL.md) for Python: the loop every Python adapter shares.

An adapter subclasses `Peer`, says who it is in the class attributes, and implements `setup`, `acquire`
and `release`; `serve(PeerClass)` does the rest: reads requests from stdin, makes one `Peer` (one library
client) at each client's `hello` and routes the client's requests to it (every client of a case in this
process: `multi_client`, threads sharing one interpreter as a Python service's do), answers `hello` and
`ping` at once, runs each `acquire` and `release` on a thread of its own (requests are concurrent), writes
one JSON line per reply or event, and exits on a process-wide `close`, the close of its last client, or end
of input. Only the standard library is used.
"""

import concurrent.futures
import itertools
import json
import math
import os
import sys
import threading
import time
import traceback

PROTOCOL = 1


def now():
    """The adapter's monotonic clock, in nanoseconds (the timestamps of every event)."""
    return time.monotonic_ns()


def whole_seconds(ms):
    """A millisecond TTL rounded up to whole seconds, for libraries that only take those."""
    return max(1, math.ceil(ms / 1000))


class Refused(Exception):
    """A request the library refused; `kind` is one of timeout, not_held, unsupported, backend, config."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class Lease:
    """What an adapter's library code uses to report events about one granted lock."""

    def __init__(self, out, lease_id):
        self._out = out
        self.id = lease_id
        # When the request that won the lock (and started its TTL) was sent, if the adapter can tell.
        self.sent = None
        self._ready = False
        self._early = []
        self._lock = threading.Lock()

    def _send(self, message):
        with self._lock:
            if not self._ready:
                self._early.append(message)
                return
        self._out.write(message)

    def granted(self):
        """Called once the acquire reply is written: events never precede their lease's grant."""
        with self._lock:
            self._ready = True
            early, self._early = self._early, []
        for message in early:
            self._out.write(message)

    def renewed(self, sent, done, ttl_ms, scheduled=None, remaining_ms=None):
        self._send({"ev": "renewed", "lease": self.id, "scheduled": scheduled, "sent": sent,
                    "done": done, "ttl_ms": ttl_ms, "remaining_ms": remaining_ms})

    def renew_failed(self, error):
        self._send({"ev": "renew_failed", "lease": self.id, "t": now(), "error": error})

    def lost(self, reason, detail=""):
        self._send({"ev": "lost", "lease": self.id, "t": now(), "reason": reason, "detail": detail})


class Peer:
    """One client of a lock library (one per protocol client; a process holds many). Subclasses set the
    attributes and implement the three methods; state shared by the process's clients belongs nowhere."""

    ADAPTER = "unnamed"
    LIBRARY = "unknown"
    VERSION = "unknown"
    CAPABILITIES = {}

    def setup(self, config):
        """Connects with `config` (`servers`: a list of addresses, plus adapter settings)."""

    def acquire(self, key, wait, mode, ttl_ms, owner, lease):
        """Takes `key`. `wait`: seconds or None (try once); `mode`: "watchdog" or "fixed"; `lease`: a
        `Lease` for events. Returns `(handle, token)` or raises `Refused`."""
        raise Refused("unsupported", "acquire")

    def release(self, handle):
        """Releases what `acquire` returned; raises `Refused("not_held", ...)` if it was no longer held."""
        raise Refused("unsupported", "release")

    def close(self):
        """Ends the client (leases still held are left to expire)."""


class _Out:
    def __init__(self):
        self._lock = threading.Lock()

    def write(self, message):
        line = json.dumps(message, separators=(",", ":")) + "\n"
        with self._lock:
            sys.stdout.write(line)
            sys.stdout.flush()


def _error(rid, kind, message):
    return {"id": rid, "ok": False, "error": {"kind": kind, "message": message}}


def serve(make_peer):
    """Runs the protocol on stdin/stdout, `make_peer()` making each client's `Peer` at its `hello`, until
    a process-wide `close` (no `client`), the close of the last open client, or end of input; then closes
    the clients still open and exits the process at once (requests still waiting in a library are
    abandoned; their locks expire by their TTL)."""
    try:
        _loop(make_peer)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _close_quietly(peer):
    try:
        peer.close()
    except Exception:  # closing is best effort: the process or the client ends anyway
        traceback.print_exc(file=sys.stderr)


def _loop(make_peer):
    out = _Out()
    clients = {}  # client number -> its Peer
    leases = {}  # lease id -> (Peer, handle): unique in the process, across its clients
    leases_lock = threading.Lock()
    ids = itertools.count(1)
    # Acquires and releases run concurrently (an acquire may wait); threads are reused between requests.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1024)

    def guarded(rid, work):
        try:
            reply = work()
        except Refused as e:
            reply = _error(rid, e.kind, str(e))
        except Exception as e:  # the library's own failure: a backend error, with the trace on stderr
            traceback.print_exc(file=sys.stderr)
            reply = _error(rid, "backend", f"{type(e).__name__}: {e}")
        return reply

    def client_of(req):
        peer = clients.get(req.get("client", 0))
        if peer is None:
            raise Refused("config", f"client {req.get('client', 0)} is not open (no hello)")
        return peer

    def do_acquire(req, peer):
        rid = req["id"]
        lease_id = f"L{next(ids)}"
        lease = Lease(out, lease_id)

        def work():
            wait_ms = req.get("wait_ms")
            spec = req["lease"]
            handle, token = peer.acquire(req["key"], None if wait_ms is None else wait_ms / 1000,
                                         spec["mode"], spec["ttl_ms"], req.get("owner"), lease)
            with leases_lock:
                leases[lease_id] = (peer, handle)
            reply = {"id": rid, "ok": True, "lease": lease_id, "token": token}
            if lease.sent is not None:
                reply["sent"] = lease.sent
            return reply

        out.write(guarded(rid, work))
        lease.granted()

    def do_release(req):
        rid = req["id"]

        def work():
            with leases_lock:
                held = leases.pop(req["lease"], None)
            if held is None:
                raise Refused("not_held", f"unknown lease {req['lease']}")
            peer, handle = held
            peer.release(handle)
            return {"id": rid, "ok": True}

        out.write(guarded(rid, work))

    def hello(req):
        peer = make_peer()
        peer.setup(req.get("config") or {})
        clients[req.get("client", 0)] = peer
        return {"id": req["id"], "ok": True, "protocol": PROTOCOL, "adapter": peer.ADAPTER,
                "library": peer.LIBRARY, "version": peer.VERSION, "multi_client": True,
                "capabilities": peer.CAPABILITIES}

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op, rid = req.get("op"), req.get("id")
        except (ValueError, AttributeError):  # not a request: there is no id to answer, so say so here
            print(f"not a request, skipped: {line.strip()!r}", file=sys.stderr, flush=True)
            continue
        if op == "ping":
            out.write({"id": rid, "ok": True, "t": now()})
        elif op == "hello":
            out.write(guarded(rid, lambda: hello(req)))
        elif op == "acquire":
            try:
                peer = client_of(req)
            except Refused as e:
                out.write(_error(rid, e.kind, str(e)))
                continue
            pool.submit(do_acquire, req, peer)
        elif op == "release":
            pool.submit(do_release, req)
        elif op == "close":
            if "client" in req:
                peer = clients.pop(req["client"], None)
                if clients:
                    out.write({"id": rid, "ok": True})
                    if peer is not None:
                        threading.Thread(target=_close_quietly, args=(peer,), daemon=True).start()
                    continue
                if peer is not None:
                    _close_quietly(peer)
            for peer in clients.values():
                _close_quietly(peer)
            out.write({"id": rid, "ok": True})
            return
        else:
            out.write(_error(rid, "unsupported", f"unknown op {op!r}"))
    for peer in clients.values():
        _close_quietly(peer)
