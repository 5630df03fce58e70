package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPlanBoundaries(t *testing.T) {
	pre := func(pos, n int) Chunk { return Chunk{Prefill: true, Pos: pos, N: n} }
	dec := func(pos int) Chunk { return Chunk{Pos: pos, N: 1} }
	decs := func(from, to int) []Chunk {
		var out []Chunk
		for p := from; p < to; p++ {
			out = append(out, dec(p))
		}
		return out
	}
	cat := func(parts ...[]Chunk) []Chunk {
		var out []Chunk
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	sh := Planner{Context: 60, Prefill: 16}
	tests := []struct {
		name   string
		shape  Planner
		pos, m int
		want   []Chunk
		err    error
	}{
		{"pos+P == C takes a last prefill", sh, 44, 16, []Chunk{pre(44, 16)}, nil},
		{"pos+P == C with fewer tokens pads", sh, 44, 3, []Chunk{pre(44, 3)}, nil},
		{"pos+P == C+1 falls back to decode", sh, 45, 2, decs(45, 47), nil},
		{"DecodeSingle: one token takes decode", Planner{Context: 60, Prefill: 16, DecodeSingle: true}, 3, 1, decs(3, 4), nil},
		{"DecodeSingle: two tokens still prefill", Planner{Context: 60, Prefill: 16, DecodeSingle: true}, 3, 2, []Chunk{pre(3, 2)}, nil},
		{"DecodeSingle: a remainder of one after a full step", Planner{Context: 60, Prefill: 16, DecodeSingle: true}, 0, 17, []Chunk{pre(0, 16), dec(16)}, nil},
		{"m == P", sh, 0, 16, []Chunk{pre(0, 16)}, nil},
		{"m == P+1", sh, 0, 17, []Chunk{pre(0, 16), pre(16, 1)}, nil},
		{"m == 1 while a prefill fits", sh, 10, 1, []Chunk{pre(10, 1)}, nil},
		{"m == 1 in the tail", sh, 59, 1, []Chunk{dec(59)}, nil},
		{"no prefill method", Planner{Context: 60}, 3, 4, decs(3, 7), nil},
		{"pos+m == C (the worked example)", sh, 0, 60, cat([]Chunk{pre(0, 16), pre(16, 16), pre(32, 16)}, decs(48, 60)), nil},
		{"pos+m == C from the middle", sh, 20, 40, cat([]Chunk{pre(20, 16), pre(36, 16)}, decs(52, 60)), nil},
		{"pos+m == C+1", sh, 0, 61, nil, ErrContextFull},
		{"pos+m == C+1 in the tail", sh, 59, 2, nil, ErrContextFull},
		{"full session", sh, 60, 1, nil, ErrContextFull},
		{"m == 0", sh, 0, 0, nil, ErrEmpty},
		{"m < 0", sh, 0, -1, nil, ErrEmpty},
		{"P == C", Planner{Context: 8, Prefill: 8}, 0, 9, nil, ErrContextFull},
		{"P == C first step only", Planner{Context: 8, Prefill: 8}, 0, 8, []Chunk{pre(0, 8)}, nil},
		{"P == C after one token", Planner{Context: 8, Prefill: 8}, 1, 7, decs(1, 8), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.shape.Plan(tc.pos, tc.m)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Plan(%d, %d) error %v, want %v", tc.pos, tc.m, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Plan(%d, %d) (-want +got):\n%s", tc.pos, tc.m, diff)
			}
		})
	}
}

func TestContextFullNamesBothNumbers(t *testing.T) {
	err := Planner{Context: 60, Prefill: 16}.CheckAppend(50, 11)
	for _, want := range []string{"61", "60", "50", "11"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %s", err, want)
		}
	}
}

// bruteForcePlan is an independent model of docs/contract.md "Planning": it chooses, for every token,
// the method that processes it, by simulating a cursor one token at a time.
func bruteForcePlan(C, P, pos, m int) ([]Chunk, bool) {
	if m < 1 || pos+m > C {
		return nil, false
	}
	var steps []Chunk
	open := false // a prefill step is accepting tokens
	for t := 0; t < m; t++ {
		a := pos + t
		if open {
			last := &steps[len(steps)-1]
			if last.N < P {
				last.N++
				continue
			}
			open = false
		}
		if P > 0 && a+P <= C {
			steps = append(steps, Chunk{Prefill: true, Pos: a, N: 1})
			open = true
		} else {
			steps = append(steps, Chunk{Pos: a, N: 1})
		}
	}
	return steps, true
}

func TestPlanMatchesBruteForce(t *testing.T) {
	checked := 0
	for C := 1; C <= 24; C++ {
		for P := 0; P <= C; P++ {
			if P == 1 {
				continue
			}
			sh := Planner{Context: C, Prefill: P}
			for pos := 0; pos <= C; pos++ {
				for m := -1; m <= C-pos+2; m++ {
					want, ok := bruteForcePlan(C, P, pos, m)
					got, err := sh.Plan(pos, m)
					if ok != (err == nil) {
						t.Fatalf("C=%d P=%d: Plan(%d, %d) error %v, brute force feasible=%v", C, P, pos, m, err, ok)
					}
					if !slices.Equal(want, got) {
						t.Fatalf("C=%d P=%d: Plan(%d, %d) (-brute +got):\n%s", C, P, pos, m, cmp.Diff(want, got))
					}
					if ok {
						checkPlanInvariants(t, sh, pos, m, got)
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d plans checked", checked)
}

// checkPlanInvariants asserts the properties every plan has.
func checkPlanInvariants(t *testing.T, sh Planner, pos, m int, steps []Chunk) {
	t.Helper()
	at := pos
	for i, st := range steps {
		where := fmt.Sprintf("C=%d P=%d pos=%d m=%d step %d %+v", sh.Context, sh.Prefill, pos, m, i, st)
		switch {
		case st.Pos != at:
			t.Fatalf("%s: starts at %d, want %d", where, st.Pos, at)
		case st.N < 1:
			t.Fatalf("%s: no real rows", where)
		case st.Prefill && (st.N > sh.Prefill || st.Pos+sh.Prefill > sh.Context):
			t.Fatalf("%s: prefill step does not fit", where)
		case !st.Prefill && (st.N != 1 || (sh.Prefill > 0 && st.Pos+sh.Prefill <= sh.Context)):
			t.Fatalf("%s: decode step where a prefill fits", where)
		case st.Prefill && st.N < sh.Prefill && i != len(steps)-1:
			t.Fatalf("%s: a padded prefill step is not the last", where)
		}
		at += st.N
	}
	if at != pos+m {
		t.Fatalf("C=%d P=%d pos=%d m=%d: plan covers up to %d", sh.Context, sh.Prefill, pos, m, at)
	}
}

func TestMaxNewTokens(t *testing.T) {
	sh := Planner{Context: 60, Prefill: 16}
	for _, tc := range []struct{ pos, want int }{{0, 61}, {50, 11}, {59, 2}, {60, 1}} {
		if got := sh.MaxNewTokens(tc.pos); got != tc.want {
			t.Errorf("MaxNewTokens(%d) = %d, want %d", tc.pos, got, tc.want)
		}
	}
}
