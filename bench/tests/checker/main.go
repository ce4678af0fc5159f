// Command checker judges lockbench histories for safety independently of
// lockbench's own oracle, with the Porcupine linearizability checker.
//
// A history (JSON lines, written by `lockbench --history`) holds every
// successful acquire, release, read and write of a case. Each key is checked
// on its own against a sequential model of a lock guarding a register:
// acquire needs the key free, release, read and an accepted write need the
// caller to hold it, and a read returns the last accepted write. A history is
// safe when every key's operations are linearizable under that model.
//
// Usage:
//
//	go run . [--timeout 60s] [--visualize DIR] FILE.jsonl [FILE.jsonl ...]
//
// It prints one line per file and exits 0 when every file is safe, 1 when any
// is violated, 2 when a file is malformed or its check timed out (and none is
// violated).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// historyFormat is the only header format this checker reads.
const historyFormat = "lockbench-history/1"

// header is a history's first line. Only format is required; keys, clients
// and fencing, when present, bound what the operation lines may say.
type header struct {
	Format   string `json:"format"`
	Strategy string `json:"strategy"`
	Lease    string `json:"lease"`
	Fencing  *bool  `json:"fencing"`
	Keys     *int   `json:"keys"`
	Clients  *int   `json:"clients"`
}

// record is one operation line. Pointers tell a missing field from a zero.
type record struct {
	Client     *int    `json:"client"`
	Key        *int    `json:"key"`
	Op         string  `json:"op"`
	InvokeNs   *uint64 `json:"invoke_ns"`
	CompleteNs *uint64 `json:"complete_ns"`
	Value      *uint64 `json:"value"`
	Token      *uint64 `json:"token"`
	Accepted   *bool   `json:"accepted"`
}

// history is a parsed file: the operations to check and how many lines and
// keys it had.
type history struct {
	ops   []porcupine.Operation
	lines int // operation lines, including reads dropped as never completed
	keys  int // distinct keys with operations
}

// pending marks an operation that never completed until its return time is
// known (the history's largest timestamp + 1).
const pending = -1

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program, with its output streams, returning the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("checker", flag.ContinueOnError)
	flags.SetOutput(stderr)
	timeout := flags.Duration("timeout", 60*time.Second, "time limit per file (0: none)")
	visualize := flags.String("visualize", "", "write Porcupine's HTML visualization of each violated file to this folder")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: checker [--timeout 60s] [--visualize DIR] FILE.jsonl [FILE.jsonl ...]")
		flags.PrintDefaults()
	}
	// Flags may come before, between or after the files.
	var files []string
	for {
		if err := flags.Parse(args); err != nil {
			return 2
		}
		if flags.NArg() == 0 {
			break
		}
		files = append(files, flags.Arg(0))
		args = flags.Args()[1:]
	}
	if len(files) == 0 {
		flags.Usage()
		return 2
	}
	violated, undecided := false, false
	for _, path := range files {
		switch checkFile(path, *timeout, *visualize, stdout, stderr) {
		case 1:
			violated = true
		case 2:
			undecided = true
		}
	}
	switch {
	case violated:
		return 1
	case undecided:
		return 2
	}
	return 0
}

// checkFile checks one history, prints its line and returns its exit code.
func checkFile(path string, timeout time.Duration, visualize string, stdout, stderr io.Writer) int {
	h, err := readHistory(path)
	if err != nil {
		fmt.Fprintf(stderr, "%s\n", err)
		return 2
	}
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(lockModel, h.ops, timeout)
	switch res {
	case porcupine.Ok:
		fmt.Fprintf(stdout, "%s: safe (%d operations, %d keys)\n", path, h.lines, h.keys)
		return 0
	case porcupine.Unknown:
		// Porcupine gave up: no violation found is not the same as safe.
		fmt.Fprintf(stdout, "%s: unknown: timed out after %v (%d operations, %d keys)\n", path, timeout, h.lines, h.keys)
		return 2
	}
	timedOut := timeout > 0 && time.Since(start) >= timeout
	key := failingKey(h.ops, info, timeout, timedOut)
	fmt.Fprintf(stdout, "%s: VIOLATED on key %d (%d operations)\n", path, key, h.lines)
	if visualize != "" {
		out := filepath.Join(visualize, strings.TrimSuffix(filepath.Base(path), ".jsonl")+".html")
		if err := os.MkdirAll(visualize, 0o755); err != nil {
			fmt.Fprintf(stderr, "%s: visualization: %v\n", path, err)
		} else if err := porcupine.VisualizePath(lockModel, info, out); err != nil {
			fmt.Fprintf(stderr, "%s: visualization: %v\n", path, err)
		} else {
			fmt.Fprintf(stderr, "%s: visualization written to %s\n", path, out)
		}
	}
	return 1
}

// failingKey names the lowest key Porcupine found no linearization for. The
// partial linearizations come per partition, in partitionByKey's order; a
// partition is linearizable when one of them covers all its operations. If
// the time limit also ran out, a key may lack a full linearization only
// because its search was stopped, so each candidate is checked again alone.
func failingKey(ops []porcupine.Operation, info porcupine.LinearizationInfo, timeout time.Duration, timedOut bool) int {
	keys, parts := partitionByKey(ops)
	var candidates []int
	for i, partials := range info.PartialLinearizations() {
		complete := false
		for _, p := range partials {
			complete = complete || len(p) == len(parts[i])
		}
		if !complete {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		return -1 // cannot happen: Porcupine said Illegal
	}
	if timedOut {
		for _, i := range candidates {
			if porcupine.CheckOperationsTimeout(lockModel, parts[i], timeout) == porcupine.Illegal {
				return keys[i]
			}
		}
	}
	return keys[candidates[0]]
}

// readHistory parses a history file. Its errors name the file and line.
func readHistory(path string) (*history, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var (
		hdr     *header
		h       history
		maxTime int64
		keys    = map[int]bool{}
		lineNo  int
	)
	bad := func(format string, a ...interface{}) error {
		return fmt.Errorf("%s:%d: bad input: %s", path, lineNo, fmt.Sprintf(format, a...))
	}
	for sc.Scan() {
		lineNo++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if hdr == nil {
			// The header may carry more fields (lockbench adds its own
			// verdict, which this checker must not use): they are ignored.
			hdr = &header{}
			if err := json.Unmarshal(line, hdr); err != nil {
				return nil, bad("header: %v", err)
			}
			if hdr.Format != historyFormat {
				return nil, bad("header format %q, want %q", hdr.Format, historyFormat)
			}
			continue
		}
		var r record
		if err := decodeStrict(line, &r); err != nil {
			return nil, bad("operation: %v", err)
		}
		op, keep, err := toOperation(r, hdr)
		if err != nil {
			return nil, bad("%v", err)
		}
		h.lines++
		if !keep {
			continue
		}
		op.Metadata = fmt.Sprintf("line %d", lineNo)
		maxTime = max(maxTime, op.Call, op.Return)
		keys[op.Input.(lockInput).key] = true
		h.ops = append(h.ops, op)
	}
	if err := sc.Err(); err != nil {
		lineNo++
		return nil, bad("%v", err)
	}
	if hdr == nil {
		lineNo = 1
		return nil, bad("no header (empty file)")
	}
	// An operation that never completed may take effect at any time after
	// its call, up to the end of the history.
	for i := range h.ops {
		if h.ops[i].Return == pending {
			h.ops[i].Return = maxTime + 1
		}
	}
	h.keys = len(keys)
	return &h, nil
}

// toOperation turns a record into a Porcupine operation. keep is false for a
// read that never completed: it returned nothing and changed nothing.
func toOperation(r record, hdr *header) (op porcupine.Operation, keep bool, err error) {
	switch {
	case r.Client == nil || *r.Client < 0 || hdr.Clients != nil && *r.Client >= *hdr.Clients:
		return op, false, errors.New("client missing or not in [0, clients)")
	case r.Key == nil || *r.Key < 0 || hdr.Keys != nil && *r.Key >= *hdr.Keys:
		return op, false, errors.New("key missing or not in [0, keys)")
	case r.InvokeNs == nil:
		return op, false, errors.New("invoke_ns missing")
	case *r.InvokeNs >= math.MaxInt64-1 || r.CompleteNs != nil && *r.CompleteNs >= math.MaxInt64-1:
		return op, false, errors.New("timestamp too large")
	case r.CompleteNs != nil && *r.CompleteNs < *r.InvokeNs:
		return op, false, errors.New("complete_ns before invoke_ns")
	case r.Token != nil && hdr.Fencing != nil && !*hdr.Fencing:
		return op, false, errors.New("token in a history without fencing")
	}
	in := lockInput{client: *r.Client, key: *r.Key, token: r.Token}
	op = porcupine.Operation{ClientId: *r.Client, Call: int64(*r.InvokeNs), Return: pending}
	if r.CompleteNs != nil {
		op.Return = int64(*r.CompleteNs)
	}
	switch r.Op {
	case "acquire":
		// Only successful acquires are recorded, so every one completed.
		if r.CompleteNs == nil {
			return op, false, errors.New("acquire without complete_ns")
		}
		in.kind = opAcquire
	case "release":
		// A release that never completed may or may not have freed the key.
		in.kind = opRelease
	case "read":
		if r.CompleteNs == nil {
			return op, false, nil
		}
		if r.Value == nil {
			return op, false, errors.New("read without value")
		}
		in.kind = opRead
		op.Output = *r.Value
	case "write":
		if r.Value == nil {
			return op, false, errors.New("write without value")
		}
		in.kind, in.value = opWrite, *r.Value
		switch {
		case r.Accepted != nil && !*r.Accepted:
			in.result = refused
		case r.Accepted != nil || r.CompleteNs != nil:
			// A completed write without "accepted" went to a resource
			// that refuses nothing.
			in.result = accepted
		default:
			in.result = unknown
		}
	default:
		return op, false, fmt.Errorf("op %q, want acquire, release, read or write", r.Op)
	}
	op.Input = in
	return op, true, nil
}

// decodeStrict decodes one JSON object, refusing unknown fields and trailing
// data, so that a format drift shows as bad input instead of a wrong verdict.
func decodeStrict(line []byte, v interface{}) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}
