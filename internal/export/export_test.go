package export_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/models"
	"github.com/hfstatic/hfstatic/program"
)

func TestInvalidOptionsAreRejectedBeforeWriting(t *testing.T) {
	ckpt, err := hf.Open(models.Stories260K())
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	cases := map[string]export.Options{
		"prefill of one":               {Prefill: 1},
		"prefill past context":         {Context: 16, Prefill: 17},
		"negative context":             {Context: -1},
		"quantized cache":              {CacheDType: program.Q8},
		"unknown weights":              {Weights: "q3"},
		"unknown logits rows":          {PrefillLogits: "some"},
		"unknown layout":               {SlidingLayout: "spiral"},
		"keep unknown tensor":          {Weights: "q8", Keep: []string{"nope.weight"}},
		"tensor rule matching nothing": {Weights: "q4", TensorWeights: []export.TensorWeight{{Match: "nope_proj", Type: "q8"}}},
		"tensor rule of a norm only":   {Weights: "q4", TensorWeights: []export.TensorWeight{{Match: "input_layernorm", Type: "q8"}}},
		"tensor rule of no type":       {Weights: "q4", TensorWeights: []export.TensorWeight{{Match: "v_proj", Type: "q3"}}},
		"empty tensor rule":            {Weights: "q4", TensorWeights: []export.TensorWeight{{Match: "", Type: "q8"}}},
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := export.Export(context.Background(), ckpt, &buf, o)
			if !errors.Is(err, export.ErrOptions) {
				t.Errorf("Export(%+v) = %v, want ErrOptions", o, err)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before rejecting the options", buf.Len())
			}
		})
	}
}

func TestExportRecordsWhatItWrote(t *testing.T) {
	ckpt, err := hf.Open(models.Stories260K())
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	var buf bytes.Buffer
	var last export.Progress
	sum, err := export.Export(context.Background(), ckpt, &buf, export.Options{Context: 32, Prefill: 8, Weights: "q8",
		Progress: func(p export.Progress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	if last.Done != last.Total || last.Total == 0 {
		t.Errorf("last progress %+v, want Done == Total > 0", last)
	}
	f, err := program.Decode(buf.Bytes(), program.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Fingerprint != sum.Fingerprint || sum.Bytes != int64(buf.Len()) {
		t.Errorf("summary %+v disagrees with the file (fingerprint %s, %d bytes)", sum, f.Fingerprint, buf.Len())
	}
	md := f.Manifest.Metadata
	if md.MaxContext != 32 || md.CacheDType != program.F16 || md.Source.Weights != "q8" || md.Source.Architecture != "LlamaForCausalLM" {
		t.Errorf("metadata %+v", md)
	}
	types := map[program.DType]int{}
	for _, tt := range f.Manifest.Tensors {
		types[tt.DType]++
	}
	// 5 layers × 6 matrices + the tied embedding are q8; the 5 down projections (172
	// columns, not whole blocks of 32) f16; norms and RoPE tables stay f32.
	if types[program.Q8] != 31 || types[program.F16] != 5 || types[program.F32] != 13 {
		t.Errorf("tensor types %v, want 31 q8, 5 f16 and 13 f32", types)
	}
	if _, ok := f.Asset(program.AssetTokenizer); !ok {
		t.Error("tokenizer.json is not embedded")
	}
	if _, ok := f.Manifest.Method("prefill"); !ok {
		t.Error("no prefill method")
	}
}

// TensorWeights rules choose the type of the matrices they match, ahead of Weights (every
// projection here matches one, so no q4 is left); the first matching rule wins.
func TestTensorWeightRulesChooseMatrixTypes(t *testing.T) {
	ckpt, err := hf.Open(models.Stories260K())
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	var buf bytes.Buffer
	rules := []export.TensorWeight{{Match: "v_proj", Type: "q8"}, {Match: "proj", Type: "f16"}, {Match: "v_proj", Type: "f32"}}
	if _, err := export.Export(context.Background(), ckpt, &buf, export.Options{Context: 32, Prefill: 8, Weights: "q4", TensorWeights: rules}); err != nil {
		t.Fatal(err)
	}
	f, err := program.Decode(buf.Bytes(), program.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[program.DType]int{}
	for _, ti := range f.Manifest.Tensors {
		want := program.F32 // norms, rope tables
		switch {
		case strings.Contains(ti.Name, "v_proj"):
			want = program.Q8
		case strings.Contains(ti.Name, "proj"):
			want = program.F16
		case strings.Contains(ti.Name, "embed"), strings.Contains(ti.Name, "lm_head"):
			want = program.Q8 // EmbedWeights' default for q4
		}
		if ti.DType != want {
			t.Errorf("%s: %s, want %s", ti.Name, ti.DType, want)
		}
		seen[ti.DType]++
	}
	if seen[program.Q8] == 0 || seen[program.F16] == 0 {
		t.Errorf("types written %v: the rules did not apply", seen)
	}
}
