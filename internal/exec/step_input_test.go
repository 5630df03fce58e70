package exec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/exec"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/program/programtest"
)

// decodeStep loads stories260K (context 8, f32 caches) and binds its decode method to
// fresh buffers.
func decodeStep(t *testing.T) (*exec.Step, map[string][]byte) {
	t.Helper()
	data := exporttest.Program(t, models.Stories260K(), export.Options{Context: 8, CacheDType: program.F32})
	f, err := program.Decode(data, program.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := exec.Load(f, exec.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	m, _ := p.Method("decode")
	bufs := map[string][]byte{}
	for _, list := range [][]program.IO{m.Spec().Inputs, m.Spec().Outputs} {
		for _, b := range list {
			bufs[b.Name] = programtest.Aligned(make([]byte, b.Bytes()))
		}
	}
	s, err := m.Bind(bufs)
	if err != nil {
		t.Fatal(err)
	}
	return s, bufs
}

func i64(b []byte) []int64 { return unsafe.Slice((*int64)(unsafe.Pointer(&b[0])), len(b)/8) }

// setStep fills the decode inputs for token id at position pos.
func setStep(bufs map[string][]byte, id int64, pos int) {
	i64(bufs[program.InputIDs])[0] = id
	i64(bufs[program.PositionIDs])[0] = int64(pos)
	mask := bufs[program.AttentionMask]
	clear(mask)
	for j := 0; j <= pos; j++ {
		mask[j] = 1
	}
}

func TestDecodeStepAllocatesNothing(t *testing.T) {
	s, bufs := decodeStep(t)
	ctx := context.Background()
	pos := 0
	allocs := testing.AllocsPerRun(6, func() {
		setStep(bufs, 1, pos)
		if err := s.Run(ctx); err != nil {
			t.Fatal(err)
		}
		pos++
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per decode step, want 0", allocs)
	}
	if c := i64(bufs[program.Counter(0)])[0]; c != int64(pos) {
		t.Errorf("counter_0 = %d after %d steps", c, pos)
	}
}

func TestInvalidStepInputsAreErrors(t *testing.T) {
	cases := []struct {
		name  string
		setup func(bufs map[string][]byte)
	}{
		{"token id outside the vocabulary", func(b map[string][]byte) { setStep(b, 512, 0) }},
		{"negative token id", func(b map[string][]byte) { setStep(b, -1, 0) }},
		{"no real row in the mask", func(b map[string][]byte) { setStep(b, 1, 0); clear(b[program.AttentionMask]) }},
		{"counter disagrees with the position", func(b map[string][]byte) { setStep(b, 1, 3) }},
		{"position past the RoPE table", func(b map[string][]byte) {
			setStep(b, 1, 0)
			i64(b[program.PositionIDs])[0] = 100
			for l := 0; l < 5; l++ {
				i64(b[program.Counter(l)])[0] = 100
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, bufs := decodeStep(t)
			c.setup(bufs)
			if err := s.Run(context.Background()); !errors.Is(err, exec.ErrStep) {
				t.Errorf("Run = %v, want ErrStep", err)
			}
		})
	}
}

// decodeSteps binds the decode method of one loaded stories260K program (weights: its
// weight type, "" for the checkpoint's) to n sessions' buffers.
func decodeSteps(t *testing.T, n int, weights string) (*exec.Program, []*exec.Step, []map[string][]byte) {
	t.Helper()
	_, b0 := decodeStep(t)
	data := exporttest.Program(t, models.Stories260K(), export.Options{Context: 8, CacheDType: program.F32, Weights: weights})
	f, err := program.Decode(data, program.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := exec.Load(f, exec.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	m, _ := p.Method("decode")
	var steps []*exec.Step
	var all []map[string][]byte
	for range n {
		bufs := map[string][]byte{}
		for name, b := range b0 {
			bufs[name] = programtest.Aligned(make([]byte, len(b)))
		}
		s, err := m.Bind(bufs)
		if err != nil {
			t.Fatal(err)
		}
		steps, all = append(steps, s), append(all, bufs)
	}
	return p, steps, all
}

// Batched decode steps equal lone ones bit for bit and allocate nothing: 3 sessions of
// float weights, and 12 of q8 and q4 (more rows than one pass of the int8 batch stream).
func TestBatchedDecodeEqualsLoneStepsAndAllocatesNothing(t *testing.T) {
	for _, c := range []struct {
		weights string
		n       int
	}{{"", 3}, {"q8", 12}, {"q4", 12}} {
		t.Run(fmt.Sprintf("%s/%d", c.weights, c.n), func(t *testing.T) {
			n := c.n
			p, steps, bufs := decodeSteps(t, n, c.weights)
			_, lone, loneBufs := decodeSteps(t, n, c.weights)
			ctx := context.Background()
			errs := make([]error, n)
			pos := 0
			allocs := testing.AllocsPerRun(5, func() {
				for i := range n {
					setStep(bufs[i], int64(1+i*7+pos), pos)
					setStep(loneBufs[i], int64(1+i*7+pos), pos)
					if err := lone[i].Run(ctx); err != nil {
						t.Fatal(err)
					}
				}
				p.RunBatch(ctx, steps, errs)
				for i, err := range errs {
					if err != nil {
						t.Fatalf("step %d at %d: %v", i, pos, err)
					}
				}
				pos++
			})
			if allocs != 0 {
				t.Errorf("%.1f allocations per batched step (and lone steps), want 0", allocs)
			}
			for i := range n {
				for name, b := range loneBufs[i] {
					if !bytes.Equal(b, bufs[i][name]) {
						t.Errorf("session %d: %s after %d batched steps differs from running alone", i, name, pos)
					}
				}
			}
		})
	}
}

// A step refused in a batch changes nothing; the others run as they would alone.
func TestBatchedStepWithBadInputFailsAlone(t *testing.T) {
	p, steps, bufs := decodeSteps(t, 3, "")
	_, lone, loneBufs := decodeSteps(t, 3, "")
	ctx := context.Background()
	for i := range 3 {
		setStep(bufs[i], int64(3+i), 0)
		setStep(loneBufs[i], int64(3+i), 0)
	}
	setStep(bufs[1], 512, 0) // outside the vocabulary
	before := map[string][]byte{}
	for name, b := range bufs[1] {
		before[name] = bytes.Clone(b)
	}
	errs := make([]error, 3)
	p.RunBatch(ctx, steps, errs)
	if !errors.Is(errs[1], exec.ErrStep) || errs[0] != nil || errs[2] != nil {
		t.Fatalf("errors %v, want ErrStep for step 1 only", errs)
	}
	for name, b := range bufs[1] {
		if !bytes.Equal(b, before[name]) {
			t.Errorf("the refused step's %s changed", name)
		}
	}
	for _, i := range []int{0, 2} {
		if err := lone[i].Run(ctx); err != nil {
			t.Fatal(err)
		}
		for name, b := range loneBufs[i] {
			if !bytes.Equal(b, bufs[i][name]) {
				t.Errorf("session %d: %s differs from running alone", i, name)
			}
		}
	}
}
