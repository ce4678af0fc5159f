"""A hand-made Redis lock, driven by lockbench through the adapter protocol (adapters/PROTOCOL.md).

The lock: SET key value NX PX ttl to take it; a renewal thread that extends it every third of the TTL
while the value is still ours; a compare-and-delete to release it. No fencing token. Standard library
only: it speaks RESP to Redis over a socket itself. One client per process (it ignores `client`).
"""
import json, socket, sys, threading, time, uuid

RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
CAPABILITIES = {"reentrant": False, "fencing": False, "auto_renew": True, "fixed_lease": True,
                "wait_notify": False, "lost_signal": False, "hold_identity": True, "renew_events": True,
                "min_ttl_ms": 1, "ttl_granularity_ms": 1}
out_lock = threading.Lock()


def send(message):
    with out_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


class Redis:
    """One connection, one command at a time; after an error the next command reconnects."""
    def __init__(self, url):
        host, port = url.split("//")[-1].split("/")[0].rsplit(":", 1)
        self.address, self.sock, self.lock = (host, int(port)), None, threading.Lock()

    def call(self, *args):
        parts = [f"*{len(args)}\r\n".encode()]
        for a in map(lambda a: str(a).encode(), args):
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        with self.lock:
            try:
                if self.sock is None:
                    self.sock = socket.create_connection(self.address, timeout=2)
                    self.file = self.sock.makefile("rb")
                self.sock.sendall(b"".join(parts))
                return self.reply()
            except OSError:
                self.sock.close() if self.sock else None
                self.sock = None  # a reply may still be on its way: never read it as another's
                raise

    def reply(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            return None if rest == b"-1" else self.file.read(int(rest) + 2)[:-2].decode()
        return rest.decode()  # +OK


class Lease:
    def __init__(self, key, value, renew_ms):
        self.key, self.value, self.renew_ms = key, value, renew_ms
        self.stopped = threading.Event()


def renew(redis, lease_id, lease):
    """Extends the lock every third of its TTL while it is still ours; stops at the first refusal."""
    while not lease.stopped.wait(lease.renew_ms / 3000):
        sent = time.monotonic_ns()
        try:
            extended = redis.call("EVAL", RENEW, 1, lease.key, lease.value, lease.renew_ms)
        except Exception as e:
            send({"ev": "renew_failed", "lease": lease_id, "t": time.monotonic_ns(), "error": str(e)})
            continue
        if not extended:  # the lock expired or was taken: nobody is told, as with most hand-made locks
            send({"ev": "renew_failed", "lease": lease_id, "t": time.monotonic_ns(), "error": "not ours"})
            return
        send({"ev": "renewed", "lease": lease_id, "sent": sent, "done": time.monotonic_ns(),
              "ttl_ms": lease.renew_ms})


def acquire(redis, leases, req):
    mode, ttl_ms = req["lease"]["mode"], int(req["lease"]["ttl_ms"])
    deadline = time.monotonic() + (req["wait_ms"] or 0) / 1000
    value = uuid.uuid4().hex
    while True:
        sent = time.monotonic_ns()
        if redis.call("SET", req["key"], value, "NX", "PX", ttl_ms) == "OK":
            break
        if time.monotonic() >= deadline:
            return {"ok": False, "error": {"kind": "timeout", "message": f"{req['key']} is held"}}
        time.sleep(0.05)  # polling: nothing tells a waiter the lock is free
    lease_id = f"L{uuid.uuid4().hex[:8]}"
    leases[lease_id] = lease = Lease(req["key"], value, ttl_ms)
    if mode == "watchdog":
        threading.Thread(target=renew, args=(redis, lease_id, lease), daemon=True).start()
    return {"ok": True, "lease": lease_id, "token": None, "sent": sent}


def release(redis, leases, req):
    lease = leases.pop(req["lease"], None)
    if lease is None:
        return {"ok": False, "error": {"kind": "not_held", "message": "unknown lease"}}
    lease.stopped.set()
    if redis.call("EVAL", RELEASE, 1, lease.key, lease.value) != 1:
        return {"ok": False, "error": {"kind": "not_held", "message": f"{lease.key} is no longer ours"}}
    return {"ok": True}


def answer(work, redis, leases, req):
    try:
        reply = work(redis, leases, req)
    except Exception as e:
        reply = {"ok": False, "error": {"kind": "backend", "message": repr(e)}}
    send({"id": req["id"], **reply})


def main():
    redis, leases = None, {}
    for line in sys.stdin:
        try:
            req = json.loads(line)
        except ValueError:
            print(f"not a request, skipped: {line!r}", file=sys.stderr, flush=True)
            continue
        op = req.get("op")
        if op == "hello":
            redis = Redis(req["config"]["servers"][0])
            send({"id": req["id"], "ok": True, "protocol": 1, "adapter": "py-hand-made-lock",
                  "library": "hand-made SET NX PX lock", "version": "1.0", "capabilities": CAPABILITIES})
        elif op == "ping":
            send({"id": req["id"], "ok": True, "t": time.monotonic_ns()})
        elif op in ("acquire", "release"):
            work = acquire if op == "acquire" else release
            threading.Thread(target=answer, args=(work, redis, leases, req), daemon=True).start()
        elif op == "close":
            send({"id": req["id"], "ok": True})
            return
        else:
            send({"id": req.get("id"), "ok": False, "error": {"kind": "unsupported", "message": op}})


if __name__ == "__main__":
    main()
