// harness: the in-process throughput harness (adapters/HARNESS.md) for etcd's Go concurrency.Mutex:
// baseline's load loop run by goroutines of one process, with no adapter protocol in between, to tell
// the library's own speed from what the go-etcd-mutex row adds. It writes every critical section as a
// line in the format of adapters/jvm/harness/Harness.java, which adapters/harness/summarize.py reads.
//
// Each client is a goroutine: pick one of -keys keys at random, Lock it (a context deadline of
// -acquire-wait), hold it for a task drawn uniformly from [-task-min, -task-max], Unlock; again until
// the window ends. A Mutex belongs to a Session (one lease, TTL -ttl whole seconds, kept alive by the
// client), and two Mutexes of one name on one Session share the Session's key, so each client needs
// a Session of its own. -instances says what the clients share: `shared` (one clientv3.Client, a
// Session per goroutine, as a service runs its goroutines) or `per-goroutine` (a Client and a Session
// each, as the adapter row gives each lockbench client a process). Several processes, each with some of
// the clients, measure the same wall-clock window when given the same -start-at.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// section is one critical section: client, key, when its acquire began, when it was granted and
// when it ended (CLOCK_MONOTONIC ns, comparable across processes and with the JVM's nanoTime).
type section struct {
	client, key        int
	asked, start, ende int64
}

func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// processCPU is the CPU time (user and system) this process has used, in ns.
func processCPU() int64 {
	var usage unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &usage); err != nil {
		panic(err)
	}
	return usage.Utime.Nano() + usage.Stime.Nano()
}

func connect(endpoints string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints: strings.Split(endpoints, ","), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
}

func main() {
	endpoints := flag.String("endpoints", "", "etcd client URLs, comma-separated")
	clients := flag.Int("clients", 16, "clients (goroutines) in this process")
	firstClient := flag.Int("first-client", 0, "this process's first client index among all processes'")
	keys := flag.Int("keys", 4, "keys")
	taskMin := flag.Duration("task-min", time.Millisecond, "shortest task")
	taskMax := flag.Duration("task-max", 5*time.Millisecond, "longest task")
	wait := flag.Duration("acquire-wait", 10*time.Second, "how long an acquire waits")
	ttl := flag.Int("ttl", 10, "session TTL, whole seconds")
	warmup := flag.Duration("warmup", time.Second, "warm-up before the window (without -start-at)")
	duration := flag.Duration("duration", time.Second, "measured window")
	goAt := flag.Int64("go-at", 0, "when the load begins, Unix ms, once every client is connected (default: at once)")
	startAt := flag.Int64("start-at", 0, "the window's start, Unix ms (default: go-at + warmup)")
	instances := flag.String("instances", "shared", "shared | per-goroutine")
	out := flag.String("out", "", "where the sections go (default stdout)")
	flag.Parse()
	if *instances != "shared" && *instances != "per-goroutine" {
		fmt.Fprintf(os.Stderr, "harness: -instances is shared or per-goroutine, not %s\n", *instances)
		os.Exit(2)
	}

	var shared *clientv3.Client
	sessions := make([]*concurrency.Session, *clients)
	owned := []*clientv3.Client{}
	for i := range sessions {
		client := shared
		if client == nil || *instances == "per-goroutine" {
			c, err := connect(*endpoints)
			if err != nil {
				fmt.Fprintf(os.Stderr, "harness: etcd at %s: %v\n", *endpoints, err)
				os.Exit(1)
			}
			owned = append(owned, c)
			client = c
			if *instances == "shared" {
				shared = c
			}
		}
		s, err := concurrency.NewSession(client, concurrency.WithTTL(*ttl))
		if err != nil {
			fmt.Fprintf(os.Stderr, "harness: session: %v\n", err)
			os.Exit(1)
		}
		sessions[i] = s
	}

	goTime := time.Now()
	if *goAt != 0 {
		goTime = time.UnixMilli(*goAt)
	}
	if late := time.Since(goTime); late > 0 && *goAt != 0 {
		fmt.Fprintf(os.Stderr, "harness: connected %d ms after -go-at\n", late.Milliseconds())
	}
	start := goTime.Add(*warmup)
	if *startAt != 0 {
		start = time.UnixMilli(*startAt)
	}
	measureFrom := monotonic() + time.Until(start).Nanoseconds()
	measureTo := measureFrom + duration.Nanoseconds()
	var cpu [2]int64 // the process's CPU time (ns) at the window's start and end
	var clock sync.WaitGroup
	clock.Add(1)
	go func() {
		defer clock.Done()
		for i, at := range []int64{measureFrom, measureTo} {
			time.Sleep(time.Duration(at - monotonic()))
			cpu[i] = processCPU()
		}
	}()
	holders := make([]atomic.Int32, *keys)
	var overlaps, failures atomic.Int64
	perClient := make([][]section, *clients)
	var group sync.WaitGroup
	for i := range *clients {
		group.Add(1)
		go func() {
			defer group.Done()
			time.Sleep(time.Until(goTime))
			for monotonic() < measureTo {
				key := rand.IntN(*keys)
				asked := monotonic()
				m := concurrency.NewMutex(sessions[i], fmt.Sprintf("harness-%d", key))
				ctx, cancel := context.WithTimeout(context.Background(), *wait)
				err := m.Lock(ctx)
				cancel()
				if err != nil {
					failures.Add(1)
					continue
				}
				granted := monotonic()
				if holders[key].Add(1) > 1 {
					overlaps.Add(1)
				}
				task := *taskMin
				if *taskMax > *taskMin {
					task += rand.N(*taskMax - *taskMin)
				}
				time.Sleep(task)
				holders[key].Add(-1)
				ended := monotonic()
				if err := m.Unlock(context.Background()); err != nil {
					failures.Add(1)
				}
				perClient[i] = append(perClient[i], section{*firstClient + i, key, asked, granted, ended})
			}
		}()
	}
	group.Wait()
	clock.Wait()
	for _, s := range sessions {
		s.Close()
	}
	for _, c := range owned {
		c.Close()
	}

	w := os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintf(os.Stderr, "harness: %v\n", err)
			os.Exit(1)
		}
		defer f.Close()
		w = f
	}
	b := bufio.NewWriter(w)
	defer b.Flush()
	fmt.Fprintf(b, "window %d %d overlaps %d failures %d cpu_ns %d\n", measureFrom, measureTo, overlaps.Load(),
		failures.Load(), cpu[1]-cpu[0])
	for _, sections := range perClient {
		for _, s := range sections {
			fmt.Fprintf(b, "%d %d %d %d %d\n", s.client, s.key, s.asked, s.start, s.ende)
		}
	}
}
