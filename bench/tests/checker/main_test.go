package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHistories runs the checker on each handwritten history in testdata.
func TestHistories(t *testing.T) {
	tests := []struct {
		file string
		code int
		want string // expected in the output
	}{
		// Two clients take turns on key 0, reads see the last write; key 1 too.
		{"safe.jsonl", 0, "safe.jsonl: safe (13 operations, 2 keys)"},
		// Key 2 and key 1 both have B acquiring before A releases: name key 1.
		{"overlap.jsonl", 1, "overlap.jsonl: VIOLATED on key 1 (10 operations)"},
		// Holds take turns, but B reads 0 after A wrote 1.
		{"lost_update.jsonl", 1, "lost_update.jsonl: VIOLATED on key 0 (8 operations)"},
		// The stale write was refused, yet the holders overlapped.
		{"fencing_rejected.jsonl", 1, "fencing_rejected.jsonl: VIOLATED on key 0 (8 operations)"},
		// A never released, so it held until the end: B's acquire overlaps.
		{"missing_release.jsonl", 1, "missing_release.jsonl: VIOLATED on key 0 (5 operations)"},
		// A hold without release that nobody else takes after is fine, and
		// a read that never completed constrains nothing.
		{"unreleased_at_end.jsonl", 0, "unreleased_at_end.jsonl: safe (5 operations, 1 keys)"},
		// A write that never completed may have landed during its hold.
		{"pending_write.jsonl", 0, "pending_write.jsonl: safe (9 operations, 1 keys)"},
		// ...but not after its client released.
		{"pending_write_late.jsonl", 1, "pending_write_late.jsonl: VIOLATED on key 0 (6 operations)"},
		// A truncated line: bad input naming file and line.
		{"bad_line.jsonl", 2, "bad_line.jsonl:4: bad input"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			code, out := runChecker(t, filepath.Join("testdata", tc.file))
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, output %q; want exit %d and %q", code, out, tc.code, tc.want)
			}
		})
	}
}

// TestBadInput checks that malformed lines are refused with their line number.
func TestBadInput(t *testing.T) {
	hdr := `{"format":"lockbench-history/1","strategy":"s","lease":"l","fencing":false,"keys":1,"clients":1}`
	acq := `{"client":0,"key":0,"op":"acquire","invoke_ns":1,"complete_ns":2}`
	tests := map[string]string{
		"empty file":          "",
		"wrong format":        `{"format":"lockbench-history/2","fencing":false,"keys":1,"clients":1}`,
		"unknown field":       hdr + "\n" + `{"client":0,"key":0,"op":"acquire","invoke":1,"complete_ns":2}`,
		"client out of range": hdr + "\n" + `{"client":1,"key":0,"op":"acquire","invoke_ns":1,"complete_ns":2}`,
		"unknown op":          hdr + "\n" + acq + "\n" + `{"client":0,"key":0,"op":"renew","invoke_ns":3,"complete_ns":4}`,
		"completes early":     hdr + "\n" + `{"client":0,"key":0,"op":"acquire","invoke_ns":5,"complete_ns":4}`,
		"token, no fencing":   hdr + "\n" + `{"client":0,"key":0,"op":"acquire","invoke_ns":1,"complete_ns":2,"token":3}`,
		"read without value":  hdr + "\n" + acq + "\n" + `{"client":0,"key":0,"op":"read","invoke_ns":3,"complete_ns":4}`,
	}
	for name, text := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.jsonl")
			if err := os.WriteFile(path, []byte(text+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := runChecker(t, path)
			line := strings.Count(text, "\n") + 1
			if code != 2 || !strings.Contains(out, fmt.Sprintf("h.jsonl:%d: bad input", line)) {
				t.Errorf("exit %d, output %q; want exit 2 naming line %d", code, out, line)
			}
		})
	}
}

// TestTimeoutIsNotSafe gives Porcupine a history too hard for its time
// limit: many overlapping writes and reads, one read of a value nobody wrote
// completing last. A timed-out check must say unknown, never safe.
func TestTimeoutIsNotSafe(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"format":"lockbench-history/1","strategy":"s","lease":"l","fencing":false,"keys":1,"clients":1}` + "\n")
	b.WriteString(`{"client":0,"key":0,"op":"acquire","invoke_ns":1,"complete_ns":2}` + "\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, `{"client":0,"key":0,"op":"write","invoke_ns":%d,"complete_ns":1000,"value":%d}`+"\n", 10+i, i)
		fmt.Fprintf(&b, `{"client":0,"key":0,"op":"read","invoke_ns":%d,"complete_ns":1000,"value":%d}`+"\n", 50+i, i)
	}
	b.WriteString(`{"client":0,"key":0,"op":"read","invoke_ns":100,"complete_ns":2000,"value":99}` + "\n")
	path := filepath.Join(t.TempDir(), "hard.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runChecker(t, path, "--timeout", "200ms")
	if code != 2 || !strings.Contains(out, "unknown: timed out") {
		t.Errorf("exit %d, output %q; want exit 2 and unknown: timed out", code, out)
	}
}

// TestExitCodes checks how several files combine: a violation wins over a
// file that could not be checked, which wins over safe.
func TestExitCodes(t *testing.T) {
	safe, bad, violated := "testdata/safe.jsonl", "testdata/bad_line.jsonl", "testdata/overlap.jsonl"
	for _, tc := range []struct {
		files []string
		code  int
	}{
		{[]string{safe, safe}, 0},
		{[]string{safe, bad}, 2},
		{[]string{bad, violated, safe}, 1},
	} {
		if code, out := runChecker(t, tc.files...); code != tc.code {
			t.Errorf("%v: exit %d, want %d; output %q", tc.files, code, tc.code, out)
		}
	}
}

// TestVisualize checks that a violated file gets its HTML visualization.
func TestVisualize(t *testing.T) {
	dir := t.TempDir()
	if code, out := runChecker(t, "--visualize", dir, "testdata/overlap.jsonl"); code != 1 {
		t.Fatalf("exit %d, output %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "overlap.html")); err != nil {
		t.Error(err)
	}
}

// runChecker runs the program and returns its exit code and combined output.
func runChecker(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := run(args, &out, &out)
	return code, out.String()
}
