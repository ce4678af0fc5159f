// go-redsync: github.com/go-redsync/redsync/v4 (Redlock for Go) over go-redis v9 clients, one per
// independent redis-server (lockbench's Redlock nodes) for each protocol client (every client of a case
// in one process, each with its own go-redis clients), the protocol in adapters/PROTOCOL.md. The
// library `redlock` is read beside.
//
// As a user writes it: one Redsync over the nodes, a Mutex per acquire with WithExpiry(the lease's TTL)
// and the library's defaults otherwise (retry delay 50-250 ms at random, drift factor 0.01, a per-node
// timeout of 5% of the expiry, quorum N/2+1). A wait is LockContext with a context deadline (and
// unlimited tries), a try once TryLockContext.
//   - Watchdog leases: redsync renews nothing by itself; its Mutex offers ExtendContext ("resets the
//     mutex's expiry"), which a user holding a lock past its expiry calls before it runs out. This
//     adapter does that, as such a user writes it: a loop (the adapter's, not the library's) calls
//     ExtendContext a third of the TTL after the last grant or extension was sent, reports each one that
//     reached a quorum as `renewed` (its TTL is redsync's own validity, Until() less the send time), and
//     at the first that fails (no quorum, or the validity already spent) stops and sends `lost`
//     (reason renew_rejected; the error goes to the log). Declared as auto_renew, lost_signal and
//     renew_events, for that loop.
//   - Fixed leases: WithExpiry(TTL), never extended.
//   - No fencing token. Unlock deletes only its own value (a compare-and-delete script): false or an
//     error → `not_held`.
//
// `sent` is when the winning attempt's first SET NX went out (redsync's own validity runs from then).
package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"time"

	"lockbench/adapters/go/protocol"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

type redsyncPeer struct {
	pools   []redsyncredis.Pool
	clients []*goredislib.Client
}

func (*redsyncPeer) Adapter() string { return "go-redsync" }
func (*redsyncPeer) Name() string    { return "redsync (Go)" }
func (*redsyncPeer) Module() string  { return "github.com/go-redsync/redsync/v4" }

func (*redsyncPeer) Capabilities() protocol.Capabilities {
	return protocol.Capabilities{AutoRenew: true, FixedLease: true, LostSignal: true, HoldIdentity: true,
		RenewEvents: true, MinTTLms: 1, TTLGranularityMs: 1}
}

func (r *redsyncPeer) Connect(servers []string, _ map[string]string) error {
	if len(servers) == 0 {
		return protocol.Refuse("config", "no redis servers given")
	}
	for _, url := range servers {
		options, err := goredislib.ParseURL(url)
		if err != nil {
			return protocol.Refuse("config", "%s: %v", url, err)
		}
		client := goredislib.NewClient(options)
		if err := client.Ping(context.Background()).Err(); err != nil {
			return err
		}
		r.clients = append(r.clients, client)
		r.pools = append(r.pools, goredis.NewPool(client))
	}
	return nil
}

// stamping notes when each attempt's first SET NX is sent: an attempt's SET NXs go out together, and
// a failed attempt's clean-up (an EVAL of the delete script) ends it.
type stamping struct {
	pool      redsyncredis.Pool
	attempt   *atomic.Bool
	attemptAt *atomic.Int64
}

func (p stamping) Get(ctx context.Context) (redsyncredis.Conn, error) {
	conn, err := p.pool.Get(ctx)
	return stampingConn{conn, p}, err
}

type stampingConn struct {
	redsyncredis.Conn
	p stamping
}

func (c stampingConn) SetNX(name, value string, expiry time.Duration) (bool, error) {
	if c.p.attempt.CompareAndSwap(false, true) {
		c.p.attemptAt.Store(protocol.Now())
	}
	return c.Conn.SetNX(name, value, expiry)
}

func (c stampingConn) Eval(script *redsyncredis.Script, keysAndArgs ...any) (any, error) {
	c.p.attempt.Store(false)
	return c.Conn.Eval(script, keysAndArgs...)
}

func (r *redsyncPeer) Acquire(req protocol.Request) (protocol.Grant, error) {
	var attempt atomic.Bool
	var attemptAt atomic.Int64
	pools := make([]redsyncredis.Pool, len(r.pools))
	for i, pool := range r.pools {
		pools[i] = stamping{pool, &attempt, &attemptAt}
	}
	rs := redsync.New(pools...)
	var err error
	var m *redsync.Mutex
	if req.Wait == nil {
		m = rs.NewMutex(req.Key, redsync.WithExpiry(req.TTL))
		err = m.TryLockContext(context.Background())
	} else {
		m = rs.NewMutex(req.Key, redsync.WithExpiry(req.TTL), redsync.WithTries(math.MaxInt32))
		ctx, cancel := context.WithTimeout(context.Background(), *req.Wait)
		err = m.LockContext(ctx)
		cancel()
	}
	if err != nil {
		var taken *redsync.ErrTaken
		var nodeTaken *redsync.ErrNodeTaken
		if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) || errors.As(err, &nodeTaken) ||
			errors.Is(err, context.DeadlineExceeded) {
			return protocol.Grant{}, protocol.Refuse("timeout", "%s is held: %v", req.Key, err)
		}
		return protocol.Grant{}, err
	}
	sent := attemptAt.Load()
	grant := protocol.Grant{Sent: &sent}
	stop := func() {}
	if req.Watchdog {
		lost := make(chan struct{})
		renewals := make(chan protocol.Renewal, 1)
		ctx, cancel := context.WithCancel(context.Background())
		stop = cancel
		go extendLoop(ctx, m, req.Key, req.TTL, sent, renewals, lost)
		grant.Lost, grant.Renewals = lost, renewals
		grant.LostReason, grant.LostDetail = "renew_rejected", "redsync ExtendContext failed (the adapter's renewal loop)"
	}
	grant.Release = func(ctx context.Context) error {
		stop()
		ok, err := m.UnlockContext(ctx)
		if !ok {
			return protocol.Refuse("not_held", "redsync Unlock: %v", err)
		}
		return nil
	}
	return grant, nil
}

// extendLoop extends m a third of ttl after the last grant or extension was sent (`sent`, Now's
// clock), reporting each extension to renewals, until ctx ends or an extension fails (then it closes
// lost).
func extendLoop(ctx context.Context, m *redsync.Mutex, key string, ttl time.Duration, sent int64,
	renewals chan<- protocol.Renewal, lost chan<- struct{}) {
	defer close(renewals)
	for {
		due := time.Duration(sent + int64(ttl/3) - protocol.Now())
		select {
		case <-ctx.Done():
			return
		case <-time.After(due):
		}
		sent = protocol.Now()
		sentAt := time.Now()
		ok, err := m.ExtendContext(ctx)
		if ctx.Err() != nil {
			return
		}
		if !ok {
			fmt.Fprintf(os.Stderr, "go-redsync: extending %s failed: %v\n", key, err)
			close(lost)
			return
		}
		renewal := protocol.Renewal{Sent: sent, Done: protocol.Now(), TTL: m.Until().Sub(sentAt)}
		select {
		case renewals <- renewal:
		case <-ctx.Done():
			return
		}
	}
}

func (r *redsyncPeer) Close() {
	for _, c := range r.clients {
		c.Close()
	}
}

func main() { protocol.Serve(func() protocol.Library { return &redsyncPeer{} }) }
