package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/safetensors"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
)

// multimodalFolder rebuilds a Gemma3ForCausalLM folder in Gemma3ForConditionalGeneration's
// layout: every tensor renamed by rename, config.json nested into text_config under the
// multimodal class, and two vision tensors the export must ignore. extra tensors (already
// named for the layout) are added.
func multimodalFolder(t testing.TB, plain fstest.MapFS, rename func(string) string) fstest.MapFS {
	t.Helper()
	var text map[string]any
	if err := json.Unmarshal(plain["config.json"].Data, &text); err != nil {
		t.Fatal(err)
	}
	delete(text, "architectures")
	cfg, err := json.Marshal(map[string]any{
		"architectures": []string{"Gemma3ForConditionalGeneration"},
		"model_type":    "gemma3",
		"text_config":   text,
		"vision_config": map[string]any{"model_type": "siglip_vision_model", "hidden_size": 8},
	})
	if err != nil {
		t.Fatal(err)
	}
	fake := make([]byte, 4*8*8)
	for i := range fake {
		fake[i] = byte(i)
	}
	weights := rewriteTensors(t, plain["model.safetensors"].Data, func(ts safetensors.Tensor, raw []byte) []safetensors.WriteTensor {
		return []safetensors.WriteTensor{{Name: rename(ts.Name), DType: ts.DType, Shape: ts.Shape, Data: raw}}
	},
		safetensors.WriteTensor{Name: "vision_tower.vision_model.embeddings.patch_embedding.weight", DType: safetensors.F32, Shape: []int{8, 8}, Data: fake},
		safetensors.WriteTensor{Name: "multi_modal_projector.mm_input_projection_weight", DType: safetensors.F32, Shape: []int{8, 8}, Data: fake})
	return fstest.MapFS{
		"config.json":            {Data: cfg, Mode: 0o444},
		"generation_config.json": plain["generation_config.json"],
		"model.safetensors":      {Data: weights, Mode: 0o444},
	}
}

// untied gives the plain fixture its own output matrix (the embedding reversed row by
// row is as good as any other) and tie_word_embeddings false.
func untied(t testing.TB, plain fstest.MapFS) fstest.MapFS {
	t.Helper()
	var cfg map[string]any
	if err := json.Unmarshal(plain["config.json"].Data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["tie_word_embeddings"] = false
	cj, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	weights := rewriteTensors(t, plain["model.safetensors"].Data, func(ts safetensors.Tensor, raw []byte) []safetensors.WriteTensor {
		out := []safetensors.WriteTensor{{Name: ts.Name, DType: ts.DType, Shape: ts.Shape, Data: raw}}
		if ts.Name == "model.embed_tokens.weight" {
			row := len(raw) / ts.Shape[0]
			head := make([]byte, 0, len(raw))
			for r := ts.Shape[0] - 1; r >= 0; r-- {
				head = append(head, raw[r*row:(r+1)*row]...)
			}
			out = append(out, safetensors.WriteTensor{Name: "lm_head.weight", DType: ts.DType, Shape: ts.Shape, Data: head})
		}
		return out
	})
	return fstest.MapFS{
		"config.json":            {Data: cj, Mode: 0o444},
		"generation_config.json": plain["generation_config.json"],
		"model.safetensors":      {Data: weights, Mode: 0o444},
	}
}

// rewriteTensors rewrites a safetensors file tensor by tensor (each becomes what edit
// returns) and appends extra.
func rewriteTensors(t testing.TB, data []byte, edit func(ts safetensors.Tensor, raw []byte) []safetensors.WriteTensor, extra ...safetensors.WriteTensor) []byte {
	t.Helper()
	f, err := safetensors.Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var out []safetensors.WriteTensor
	for _, ts := range f.Tensors() {
		raw, err := f.Raw(ts)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, edit(ts, raw)...)
	}
	out = append(out, extra...)
	var w bytes.Buffer
	if err := safetensors.Write(&w, out, nil); err != nil {
		t.Fatal(err)
	}
	return w.Bytes()
}

func exportFolder(t testing.TB, fsys fstest.MapFS, opts export.Options) ([]byte, *export.Summary) {
	t.Helper()
	ckpt, err := hf.Open(fsys)
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	data, sum, err := export.ToMemory(context.Background(), ckpt, opts)
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	return data, sum
}

// A Gemma3ForConditionalGeneration folder (either weight prefix, tied or with its own
// output matrix) exports the same program as the Gemma3ForCausalLM folder of its text
// model: the same tensors byte for byte and bit-identical logits, with the vision tensors
// reported as ignored.
func TestGemma3MultimodalFolderExportsItsTextModel(t *testing.T) {
	plainTied, err := testckpt.Random("gemma3")
	if err != nil {
		t.Fatal(err)
	}
	plainUntied := untied(t, plainTied)
	layouts := map[string]func(string) string{
		// transformers before 4.52
		"language_model.model": decoder.Prefixed("language_model.model.", "language_model.lm_head."),
		// transformers 4.52 and later: the output head stays at the top
		"model.language_model": decoder.Prefixed("model.language_model.", ""),
	}
	opts := export.Options{Context: 40, Prefill: 3, PrefillLogits: program.LogitsAll, CacheDType: program.F32}
	prompt := []int{2, 818, 5279, 529, 7001, 563, 496, 1200, 3617, 529, 1032}
	for _, head := range []struct {
		name  string
		plain fstest.MapFS
	}{{"tied", plainTied}, {"untied", plainUntied}} {
		want, wantSum := exportFolder(t, head.plain, opts)
		wantFile, err := program.Decode(want, program.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantLogits := allLogits(t, loadModel(t, want, 1), prompt)
		for lname, rename := range layouts {
			t.Run(fmt.Sprintf("%s/%s", head.name, lname), func(t *testing.T) {
				got, sum := exportFolder(t, multimodalFolder(t, head.plain, rename), opts)
				if sum.Architecture != "Gemma3ForConditionalGeneration" {
					t.Errorf("architecture %q", sum.Architecture)
				}
				wantIgnored := []string{"multi_modal_projector.mm_input_projection_weight", "vision_tower.vision_model.embeddings.patch_embedding.weight"}
				if !slices.Equal(sum.Ignored, wantIgnored) {
					t.Errorf("ignored %q, want %q", sum.Ignored, wantIgnored)
				}
				if len(wantSum.Ignored) != 0 {
					t.Errorf("the plain export ignored %q", wantSum.Ignored)
				}
				gotFile, err := program.Decode(got, program.DecodeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(gotFile.Manifest.Tensors) != len(wantFile.Manifest.Tensors) {
					t.Fatalf("%d tensors, the plain export has %d", len(gotFile.Manifest.Tensors), len(wantFile.Manifest.Tensors))
				}
				for i, wt := range wantFile.Manifest.Tensors {
					gt := gotFile.Manifest.Tensors[i]
					_, gd, _ := gotFile.TensorData(gt.Name)
					_, wd, _ := wantFile.TensorData(wt.Name)
					if gt.Name != wt.Name || gt.DType != wt.DType || !slices.Equal(gt.Shape, wt.Shape) || !bytes.Equal(gd, wd) {
						t.Fatalf("tensor %d: %s %s%v, the plain export's is %s %s%v (data equal: %v)",
							i, gt.Name, gt.DType, gt.Shape, wt.Name, wt.DType, wt.Shape, bytes.Equal(gd, wd))
					}
				}
				gotLogits := allLogits(t, loadModel(t, got, 1), prompt)
				for i := range wantLogits {
					if !slices.Equal(gotLogits[i], wantLogits[i]) {
						d, _ := maxAbsDiff(gotLogits[i:i+1], wantLogits[i:i+1])
						t.Fatalf("position %d: logits differ from the plain export's (max |diff| %g)", i, d)
					}
				}
			})
		}
	}
}

// A multimodal config without text_config is refused with an error naming the field; one
// whose weights sit under neither prefix names both places it looked.
func TestGemma3MultimodalFolderRejections(t *testing.T) {
	plain, err := testckpt.Random("gemma3")
	if err != nil {
		t.Fatal(err)
	}
	folder := multimodalFolder(t, plain, decoder.Prefixed("model.language_model.", ""))
	var cfg map[string]any
	if err := json.Unmarshal(folder["config.json"].Data, &cfg); err != nil {
		t.Fatal(err)
	}
	delete(cfg, "text_config")
	cj, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	noText := fstest.MapFS{"config.json": {Data: cj}, "generation_config.json": folder["generation_config.json"], "model.safetensors": folder["model.safetensors"]}
	ckpt, err := hf.Open(noText)
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt.Close()
	_, err = export.Export(context.Background(), ckpt, &bytes.Buffer{}, export.Options{Context: 8})
	var fe *decoder.FieldError
	if !errors.As(err, &fe) || fe.Field != "text_config" || fe.Class != "Gemma3ForConditionalGeneration" {
		t.Errorf("export without text_config: %v (%T), want a *decoder.FieldError naming text_config", err, err)
	}

	elsewhere := multimodalFolder(t, plain, func(n string) string { return "text." + n })
	ckpt2, err := hf.Open(elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	defer ckpt2.Close()
	_, err = export.Export(context.Background(), ckpt2, &bytes.Buffer{}, export.Options{Context: 8})
	var te *export.TensorError
	if !errors.As(err, &te) || te.Name != "language_model.model.embed_tokens.weight" || !strings.Contains(err.Error(), "model.language_model.embed_tokens.weight") {
		t.Errorf("export with the weights elsewhere: %v, want a *export.TensorError naming both prefixes", err)
	}
}
