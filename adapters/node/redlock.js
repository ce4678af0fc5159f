// node-redlock: the npm `redlock` package (v5) over N independent redis-servers, the protocol in
// adapters/PROTOCOL.md. Watchdog leases use `using()`, which extends the lock `automaticExtensionThreshold`
// (500 ms) before it expires and aborts the routine's signal when it cannot; fixed leases use `acquire()`.
// A subclass of Redlock times every `extend` that `using()` makes (`renewed` / `renew_failed`); the abort
// signal is the loss (`lost`). Waiting is redlock's own retry loop: `retryCount` = wait / `retryDelay`
// (200 ms, plus up to 100 ms jitter), so a wait is honoured only to a retry. No fencing token.
// Every client of a case is served in this process (`multi_client`, one event loop as a Node service
// has): each `hello` makes a client's own Redlock over its own ioredis connections, and requests go
// to the client they name.
"use strict";

const readline = require("node:readline");
const Redis = require("ioredis");
const Redlock = require("redlock").default;
// The version this process loaded: the package.json beside the module `require` resolved.
const { version } = JSON.parse(require("fs").readFileSync(
  require("path").join(require.resolve("redlock").replace(/(node_modules[\\/]redlock)[\\/].*$/, "$1"), "package.json"), "utf8"));

const origin = process.hrtime.bigint();
const now = () => Number(process.hrtime.bigint() - origin);
const write = (message) => process.stdout.write(JSON.stringify(message) + "\n");

const clients = new Map(); // client number -> { redlock, connections }
const leases = new Map(); // lease id (unique in the process) -> { release(): Promise }
const byValue = new Map(); // lock value -> lease id (to report extensions)
let nextLease = 1;

class ObservedRedlock extends Redlock {
  async acquire(resources, duration, settings) {
    const lock = await super.acquire(resources, duration, settings);
    if (settings && settings.lease) byValue.set(lock.value, settings.lease);
    return lock;
  }

  async extend(existing, duration, settings) {
    const lease = byValue.get(existing.value);
    const sent = now();
    try {
      const lock = await super.extend(existing, duration, settings);
      if (lease) write({ ev: "renewed", lease, sent, done: now(), ttl_ms: duration });
      return lock;
    } catch (e) {
      if (lease) write({ ev: "renew_failed", lease, t: now(), error: String(e) });
      throw e;
    }
  }
}

function refused(kind, message) {
  return Object.assign(new Error(message), { kind });
}

function clientOf(req) {
  const client = clients.get(req.client ?? 0);
  if (!client) throw refused("config", `client ${req.client ?? 0} is not open (no hello)`);
  return client;
}

// Ends a client's connections (best effort: the client or the process ends anyway).
function closeClient(client) {
  for (const connection of client.connections) connection.disconnect();
}

async function acquire(req) {
  const { key, wait_ms: waitMs, lease: spec } = req;
  const { redlock } = clientOf(req);
  const id = `L${nextLease++}`;
  const settings = { retryCount: waitMs == null ? 0 : Math.floor(waitMs / 200), lease: id };
  const ttl = Math.ceil(spec.ttl_ms);
  if (spec.mode === "fixed") {
    const lock = await redlock.acquire([key], ttl, settings).catch((e) => {
      throw refused("timeout", String(e));
    });
    leases.set(id, { release: () => lock.release() });
    return { lease: id, token: null };
  }
  // Watchdog: `using` holds the lock until the routine's promise settles.
  let granted, failed, finish;
  const ready = new Promise((resolve, reject) => ((granted = resolve), (failed = reject)));
  const done = redlock.using([key], ttl, settings, (signal) => {
    signal.addEventListener("abort", () =>
      write({ ev: "lost", lease: id, t: now(), reason: "renew_rejected", detail: String(signal.error) }),
    );
    return new Promise((resolve) => {
      finish = resolve;
      granted();
    });
  });
  done.catch((e) => failed(refused("timeout", String(e))));
  await ready;
  leases.set(id, { release: () => (finish(), done) });
  return { lease: id, token: null };
}

async function handle(req) {
  const { id, op } = req;
  try {
    if (op === "hello") {
      const servers = req.config.servers || [];
      const connections = servers.map((url) => new Redis(url, { lazyConnect: false }));
      clients.set(req.client ?? 0, { redlock: new ObservedRedlock(connections), connections });
      return write({
        id, ok: true, protocol: 1, adapter: "node-redlock", library: "redlock", version, multi_client: true,
        capabilities: {
          reentrant: false, fencing: false, auto_renew: true, fixed_lease: true, wait_notify: false,
          lost_signal: true, hold_identity: true, renew_events: true, min_ttl_ms: 600, ttl_granularity_ms: 1,
        },
      });
    }
    if (op === "ping") return write({ id, ok: true, t: now() });
    if (op === "acquire") {
      const { lease, token } = await acquire(req);
      return write({ id, ok: true, lease, token });
    }
    if (op === "release") {
      const held = leases.get(req.lease);
      leases.delete(req.lease);
      if (!held) throw refused("not_held", `unknown lease ${req.lease}`);
      await held.release().catch((e) => {
        throw refused("not_held", String(e));
      });
      return write({ id, ok: true });
    }
    if (op === "close") {
      // A client's close ends that client; the process ends with its last client or a close naming none.
      const client = req.client == null ? undefined : clients.get(req.client);
      if (req.client != null) clients.delete(req.client);
      write({ id, ok: true });
      if (req.client != null && clients.size > 0) return client && closeClient(client);
      return process.exit(0);
    }
    throw refused("unsupported", `unknown op ${op}`);
  } catch (e) {
    write({ id, ok: false, error: { kind: e.kind || "backend", message: String(e.message || e) } });
  }
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  let request;
  try {
    request = JSON.parse(line);
  } catch (e) {
    // Not a request: there is no id to answer, so it is only logged.
    return process.stderr.write(`not a request, skipped: ${JSON.stringify(line)}\n`);
  }
  handle(request);
}).on("close", () => process.exit(0));
