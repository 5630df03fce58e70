package runner

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/hfstatic/hfstatic/program"
)

// goodSpec has a full and a sliding layer, a ring layout and a prefill method.
var goodSpec = fakeSpec{C: 12, P: 4, V: 9, W: 3, Layers: []program.LayerType{program.LayerFull, program.LayerSliding}}

func ioOf(t *testing.T, m *program.Manifest, method string, output bool, name string) *program.IO {
	t.Helper()
	mt, ok := m.Method(method)
	if !ok {
		t.Fatalf("no method %q", method)
	}
	list := mt.Inputs
	if output {
		list = mt.Outputs
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	t.Fatalf("method %q has no %q", method, name)
	return nil
}

func TestValidateContractRejectsBadManifests(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(t *testing.T, m *program.Manifest)
		field   string // ContractError.Field must contain this
		problem string // and the message this
		is      error
	}{
		{"unknown contract", func(t *testing.T, m *program.Manifest) { m.Metadata.Contract = "onnx_genai" }, "contract", `"onnx_genai" version 1`, ErrUnknownContract},
		{"unknown version", func(t *testing.T, m *program.Manifest) { m.Metadata.Version = 2 }, "contract", `"hf_static" version 2`, ErrUnknownContract},
		{"missing contract", func(t *testing.T, m *program.Manifest) { m.Metadata.Contract = "" }, "contract", `"" version 1`, ErrUnknownContract},
		{"zero context", func(t *testing.T, m *program.Manifest) { m.Metadata.MaxContext = 0 }, "max_context", "≥ 1", nil},
		{"zero vocabulary", func(t *testing.T, m *program.Manifest) { m.Metadata.VocabSize = 0 }, "vocab_size", "≥ 1", nil},
		{"vocabulary disagrees with logits", func(t *testing.T, m *program.Manifest) { m.Metadata.VocabSize = 10 }, "decode output logits", "want f32 [1 1 10]", nil},
		{"quantized cache dtype", func(t *testing.T, m *program.Manifest) { m.Metadata.CacheDType = program.Q8 }, "cache_dtype", "f16 or f32", nil},
		{"bf16 cache dtype", func(t *testing.T, m *program.Manifest) { m.Metadata.CacheDType = program.BF16 }, "cache_dtype", "f16 or f32", nil},
		{"quantized cache tensor", func(t *testing.T, m *program.Manifest) {
			ioOf(t, m, program.MethodDecode, false, program.KCache(0)).DType = program.Q4
		}, "decode input k_cache_0", "quantized", nil},
		{"unknown sliding layout", func(t *testing.T, m *program.Manifest) { m.Metadata.SlidingLayout = "paged" }, "sliding_layout", "ring or full", nil},
		{"no layers", func(t *testing.T, m *program.Manifest) { m.Metadata.Layers = nil }, "layers", "no layers", nil},
		{"zero kv heads", func(t *testing.T, m *program.Manifest) { m.Metadata.Layers[0].KVHeads = 0 }, "layers[0]", "kv_heads 0", nil},
		{"unknown layer type", func(t *testing.T, m *program.Manifest) { m.Metadata.Layers[1].Type = "local" }, "layers[1].type", `"local"`, nil},
		{"full-length sliding cache under ring", func(t *testing.T, m *program.Manifest) { m.Metadata.Layers[1].CacheRows = 12 }, "layers[1].cache_rows", "full-length", nil},
		{"short full cache", func(t *testing.T, m *program.Manifest) { m.Metadata.Layers[0].CacheRows = 11 }, "layers[0].cache_rows", "11, want 12", nil},
		{"window without sliding layers", func(t *testing.T, m *program.Manifest) {
			m.Metadata.Layers[1].Type = program.LayerFull
			m.Metadata.Layers[1].CacheRows = 12
		}, "sliding_window", "some layer slides", nil},
		{"sliding layer without window", func(t *testing.T, m *program.Manifest) {
			m.Metadata.SlidingLayout = program.LayoutFull
			m.Metadata.SlidingWindow = 0
		}, "sliding_window", "some layer slides", nil},
		{"eos outside vocabulary", func(t *testing.T, m *program.Manifest) { m.Metadata.Tokens.EOS = []int64{9} }, "tokens.eos", "id 9", nil},
		{"bos outside vocabulary", func(t *testing.T, m *program.Manifest) { b := int64(-1); m.Metadata.Tokens.BOS = &b }, "tokens.bos", "id -1", nil},
		{"pad outside vocabulary", func(t *testing.T, m *program.Manifest) { m.Metadata.Tokens.Pad = 99 }, "tokens.pad", "id 99", nil},
		{"missing decode method", func(t *testing.T, m *program.Manifest) { m.Methods = m.Methods[1:] }, "methods", `"decode"`, nil},
		{"decode step not 1", func(t *testing.T, m *program.Manifest) { m.Methods[0].Step = 2 }, "decode.step", "must be 1", nil},
		{"prefill step 1", func(t *testing.T, m *program.Manifest) { m.Methods[1].Step = 1 }, "prefill.step", "2..12", nil},
		{"prefill step beyond context", func(t *testing.T, m *program.Manifest) { m.Methods[1].Step = 13 }, "prefill.step", "2..12", nil},
		{"unknown logits rows", func(t *testing.T, m *program.Manifest) { m.Methods[1].Logits = "some" }, "prefill.logits", `"some"`, nil},
		{"mask shape disagrees", func(t *testing.T, m *program.Manifest) {
			ioOf(t, m, program.MethodPrefill, false, program.AttentionMask).Shape = program.Shape{1, 1, 4, 11}
		}, "prefill input attention_mask", "want bool [1 1 4 12]", nil},
		{"ids dtype disagrees", func(t *testing.T, m *program.Manifest) {
			ioOf(t, m, program.MethodDecode, false, program.InputIDs).DType = program.F32
		}, "decode input input_ids", "want i64", nil},
		{"logits dtype disagrees", func(t *testing.T, m *program.Manifest) {
			ioOf(t, m, program.MethodPrefill, true, program.Logits).DType = program.F16
		}, "prefill output logits", "want f32", nil},
		{"prefill cache disagrees with decode", func(t *testing.T, m *program.Manifest) {
			ioOf(t, m, program.MethodPrefill, false, program.VCache(1)).Shape = program.Shape{1, fakeHeads, 12, fakeDim}
		}, "prefill input v_cache_1", "want f32 [1 2 3 3]", nil},
		{"prefill cache output disagrees", func(t *testing.T, m *program.Manifest) {
			ioOf(t, m, program.MethodPrefill, true, program.KCache(0)).Shape = program.Shape{1, 1, 12, fakeDim}
		}, "prefill output k_cache_0", "want f32 [1 2 12 3]", nil},
		{"missing counter", func(t *testing.T, m *program.Manifest) {
			mt := &m.Methods[0]
			mt.Inputs = slices.DeleteFunc(mt.Inputs, func(b program.IO) bool { return b.Name == program.Counter(1) })
		}, "decode input counter_1", "missing", nil},
		{"counter not a scalar", func(t *testing.T, m *program.Manifest) {
			ioOf(t, m, program.MethodDecode, true, program.Counter(0)).Shape = program.Shape{1}
		}, "decode output counter_0", "want i64 []", nil},
		{"extra input", func(t *testing.T, m *program.Manifest) {
			m.Methods[0].Inputs = append(m.Methods[0].Inputs, program.IO{Name: "cache_position", DType: program.I64, Shape: program.Shape{1}})
		}, "decode input cache_position", "not part of the contract", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := goodSpec.manifest()
			if err := ValidateContract(m); err != nil {
				t.Fatalf("the unmutated manifest is rejected: %v", err)
			}
			tc.mutate(t, m)
			err := ValidateContract(m)
			var ce *ContractError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ContractError", err)
			}
			if !strings.Contains(ce.Field, tc.field) || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("got field %q, error %q; want field containing %q and message containing %q", ce.Field, err, tc.field, tc.problem)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.is)
			}
			if _, err := New(m, "x", &fakeExec{f: goodSpec}, Options{}); !errors.As(err, &ce) {
				t.Errorf("New accepted the manifest: %v", err)
			}
		})
	}
}

func TestValidateContractAcceptsVariants(t *testing.T) {
	tests := []struct {
		name string
		spec fakeSpec
	}{
		{"decode only", fakeSpec{C: 5, V: 3, Layers: []program.LayerType{program.LayerFull}}},
		{"context 1", fakeSpec{C: 1, V: 3, Layers: []program.LayerType{program.LayerFull}}},
		{"prefill equal to context", fakeSpec{C: 6, P: 6, V: 3, Layers: []program.LayerType{program.LayerFull}}},
		{"prefill logits last", fakeSpec{C: 6, P: 2, V: 3, Layers: []program.LayerType{program.LayerFull}, PrefillLogits: program.LogitsLast}},
		{"window larger than context", fakeSpec{C: 4, V: 3, W: 9, Layers: []program.LayerType{program.LayerSliding}}},
		{"sliding layers in the full layout", fakeSpec{C: 8, V: 3, W: 3, Layers: []program.LayerType{program.LayerSliding}, Layout: program.LayoutFull}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := ValidateContract(tc.spec.manifest()); err != nil {
				t.Errorf("rejected: %v", err)
			}
		})
	}
}

func TestContractsListsHFStaticV1AndHFEncodeV1(t *testing.T) {
	if got := Contracts(); !slices.Equal(got, []string{"hf_encode/v1", "hf_static/v1"}) {
		t.Errorf("Contracts() = %v", got)
	}
}

func TestNewRejectsMissingArguments(t *testing.T) {
	m, fe := goodSpec.manifest(), &fakeExec{f: goodSpec}
	for name, call := range map[string]func() error{
		"nil manifest":      func() error { _, err := New(nil, "fp", fe, Options{}); return err },
		"nil executor":      func() error { _, err := New(m, "fp", nil, Options{}); return err },
		"empty fingerprint": func() error { _, err := New(m, "", fe, Options{}); return err },
	} {
		if err := call(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestHeapAllocatorAlignsAndZeroes(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 1000} {
		b, err := HeapAllocator{}.Alloc(n)
		if err != nil || len(b) != n || cap(b) != n {
			t.Fatalf("Alloc(%d): len %d cap %d err %v", n, len(b), cap(b), err)
		}
		if n > 0 && uintptr(unsafe.Pointer(&b[0]))%64 != 0 {
			t.Errorf("Alloc(%d) is not 64-byte aligned", n)
		}
		if slices.ContainsFunc(b, func(x byte) bool { return x != 0 }) {
			t.Errorf("Alloc(%d) is not zeroed", n)
		}
	}
	if _, err := (HeapAllocator{}).Alloc(-1); err == nil {
		t.Errorf("Alloc(-1) succeeded")
	}
}
