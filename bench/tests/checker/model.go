package main

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// opKind names what an operation did to a key.
type opKind int

const (
	opAcquire opKind = iota
	opRelease
	opRead
	opWrite
)

// outcome is what the resource did with a write.
type outcome int

const (
	accepted outcome = iota // the write took effect
	refused                 // the resource refused it (fencing): no effect
	unknown                 // it never completed: it may or may not have taken effect
)

// lockInput is a Porcupine operation input: one client's call on one key.
// A read's output is the value it returned (uint64); other outputs are nil.
type lockInput struct {
	kind   opKind
	client int
	key    int
	value  uint64  // the value written (writes only)
	result outcome // writes only
	token  *uint64 // fencing token, for the visualization only
}

// lockState is the sequential state of one key: who holds it and the
// resource's value. holder is -1 when the key is free.
type lockState struct {
	holder int
	value  uint64
}

const free = -1

// step lists the states a key can be in after the operation, none when the
// operation is illegal in state s. Only a write of unknown outcome has two.
func step(s lockState, in lockInput, out interface{}) []interface{} {
	held := s.holder == in.client
	switch in.kind {
	case opAcquire:
		if s.holder == free {
			return []interface{}{lockState{in.client, s.value}}
		}
	case opRelease:
		if held {
			return []interface{}{lockState{free, s.value}}
		}
	case opRead:
		if held && out.(uint64) == s.value {
			return []interface{}{s}
		}
	case opWrite:
		switch {
		case in.result == refused:
			// A refused write changes nothing and is legal in any state:
			// the overlap that made the writer stale shows in acquire/release.
			return []interface{}{s}
		case in.result == unknown && held:
			return []interface{}{s, lockState{in.client, in.value}}
		case in.result == unknown:
			// Had it landed here, outside the hold, that would be illegal;
			// so only "it had no effect" remains.
			return []interface{}{s}
		case held:
			return []interface{}{lockState{in.client, in.value}}
		}
	}
	return nil
}

// partitionByKey splits a history into one sub-history per key, in
// ascending key order, and returns the keys in the same order.
func partitionByKey(history []porcupine.Operation) ([]int, [][]porcupine.Operation) {
	byKey := map[int][]porcupine.Operation{}
	for _, op := range history {
		k := op.Input.(lockInput).key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]int, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	parts := make([][]porcupine.Operation, len(keys))
	for i, k := range keys {
		parts[i] = byKey[k]
	}
	return keys, parts
}

// lockModel is the per-key lock-and-register specification. It is
// nondeterministic only because a write that never completed may or may not
// have taken effect; Porcupine turns it into a deterministic model over sets
// of states.
var lockModel = (&porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		_, parts := partitionByKey(history)
		return parts
	},
	Init: func() []interface{} {
		return []interface{}{lockState{holder: free}}
	},
	Step: func(state, input, output interface{}) []interface{} {
		return step(state.(lockState), input.(lockInput), output)
	},
	Hash: func(state interface{}) uint64 {
		s := state.(lockState)
		return s.value*31 + uint64(s.holder+1)
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(lockInput)
		tok := ""
		if in.token != nil {
			tok = fmt.Sprintf(" token %d", *in.token)
		}
		switch in.kind {
		case opAcquire:
			return fmt.Sprintf("c%d acquire%s", in.client, tok)
		case opRelease:
			return fmt.Sprintf("c%d release", in.client)
		case opRead:
			return fmt.Sprintf("c%d read → %d", in.client, output.(uint64))
		}
		what := [...]string{"", " (refused)", " (never completed)"}[in.result]
		return fmt.Sprintf("c%d write %d%s%s", in.client, in.value, tok, what)
	},
	DescribeState: func(state interface{}) string {
		s := state.(lockState)
		if s.holder == free {
			return fmt.Sprintf("free, value %d", s.value)
		}
		return fmt.Sprintf("held by c%d, value %d", s.holder, s.value)
	},
}).ToModel()
