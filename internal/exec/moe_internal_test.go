package exec

import (
	"context"
	"slices"
	"testing"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/program/programtest"
)

// routes decodes the fixture's float64-reference prompt token by token through a program
// of the given weight type and returns, per token and mixture layer, the chosen experts
// (sorted).
func routes(t *testing.T, fixture, weights string) [][]int32 {
	t.Helper()
	fsys, err := testckpt.Random(fixture)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := testckpt.Float64Reference(fixture)
	if err != nil {
		t.Fatal(err)
	}
	data := exporttest.Program(t, fsys, export.Options{Context: 32, Weights: weights, CacheDType: program.F32})
	f, err := program.Decode(data, program.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(f, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m, _ := p.Method(program.MethodDecode)
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
	i64 := func(b []byte) []int64 { return unsafe.Slice((*int64)(unsafe.Pointer(&b[0])), len(b)/8) }
	var out [][]int32
	for pos, id := range ref.InputIDs {
		i64(bufs[program.InputIDs])[0] = int64(id)
		i64(bufs[program.PositionIDs])[0] = int64(pos)
		bufs[program.AttentionMask][pos] = 1
		if err := s.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, o := range m.ops {
			if moe, ok := o.(*moeOp); ok {
				out = append(out, slices.Sorted(slices.Values(moe.choice[:moe.topK])))
			}
		}
	}
	return out
}

// Quantized programs keep a float32 router, so they choose the float program's experts
// except where quantization moves a router input across a small margin. The agreement
// is reported (docs/performance.md); the floor only catches a broken router.
func TestQuantizedProgramsRouteLikeFloat(t *testing.T) {
	for _, fixture := range []string{"mixtral"} { // qwen3moe (128 experts, 8 per token): docs/performance.md
		want := routes(t, fixture, "f32")
		for _, w := range []string{"q8", "q4"} {
			got := routes(t, fixture, w)
			sets, slots, total := 0, 0, 0
			for i := range want {
				if slices.Equal(want[i], got[i]) {
					sets++
				}
				for _, e := range got[i] {
					if _, found := slices.BinarySearch(want[i], e); found {
						slots++
					}
				}
				total += len(want[i])
			}
			t.Logf("%s %s: %d of %d token×layer expert sets equal the f32 program's, %d of %d chosen experts",
				fixture, w, sets, len(want), slots, total)
			if 10*slots < 8*total {
				t.Errorf("%s %s: only %d of %d chosen experts agree with f32", fixture, w, slots, total)
			}
		}
	}
}
