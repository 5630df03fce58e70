package export_test

import (
	"bytes"
	"context"
	"errors"
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
		"prefill of one":       {Prefill: 1},
		"prefill past context": {Context: 16, Prefill: 17},
		"negative context":     {Context: -1},
		"quantized cache":      {CacheDType: program.Q8},
		"unknown weights":      {Weights: "q3"},
		"unknown logits rows":  {PrefillLogits: "some"},
		"unknown layout":       {SlidingLayout: "spiral"},
		"keep unknown tensor":  {Weights: "q8", Keep: []string{"nope.weight"}},
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
