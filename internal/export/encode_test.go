package export_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/safetensors"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
)

// fixture is an embedding or reranking fixture as a folder, with changes.
func fixture(t *testing.T, name string, change func(fstest.MapFS)) *hf.Checkpoint {
	t.Helper()
	fsys, err := testckpt.Random(name)
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{}
	for k, v := range fsys {
		out[k] = v
	}
	if change != nil {
		change(out)
	}
	ckpt, err := hf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ckpt.Close() })
	return ckpt
}

func decode(t *testing.T, data []byte) *program.File {
	t.Helper()
	f, err := program.Decode(bytes.Clone(data), program.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestDefaultTaskFollowsTheFolder(t *testing.T) {
	for name, want := range map[string]export.Task{"bert": export.TaskEmbed, "bert-rerank": export.TaskRerank, "xlmr-rerank": export.TaskRerank,
		"qwen3-embed": export.TaskEmbed, "qwen3-rerank": export.TaskRerank, "qwen3": export.TaskGenerate} {
		if got := export.DefaultTask(fixture(t, name, nil)); got != want {
			t.Errorf("%s: task %s, want %s", name, got, want)
		}
	}
}

func TestEncodeMetadataComesFromTheFolder(t *testing.T) {
	data, sum, err := export.ToMemory(context.Background(), fixture(t, "bert", nil), export.Options{Batch: 5, Weights: "q8"})
	if err != nil {
		t.Fatal(err)
	}
	md := decode(t, data).Manifest.Metadata
	e := md.Encoder
	// all-MiniLM-L6-v2's layout: max_seq_length 48, mean pooling, normalized, two token types.
	if md.Contract != program.EncodeContractName || md.MaxContext != 48 || e.Batch != 5 || e.Dim != 32 || e.Pooling != program.PoolMean ||
		!e.Normalized || e.TokenTypes != 2 || e.Output != program.OutputEmbedding || md.Source.Weights != "q8" || sum.Task != export.TaskEmbed {
		t.Errorf("metadata %+v, encoder %+v, summary task %s", md, e, sum.Task)
	}
	// A cross-encoder scores pairs with the tokenizer's template and a sigmoid.
	data, _, err = export.ToMemory(context.Background(), fixture(t, "xlmr-rerank", nil), export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	md = decode(t, data).Manifest.Metadata
	if e := md.Encoder; md.MaxContext != 64 || e.Output != program.OutputScore || e.Dim != 1 || e.Pair == nil || e.Pair.Kind != program.PairTokenizer ||
		e.Relevance != program.RelevanceSigmoid || e.TokenTypes != 1 || md.Tokens.Pad != 1 {
		t.Errorf("xlmr-rerank: context %d, encoder %+v, pad %d", md.MaxContext, e, md.Tokens.Pad)
	}
	// A cross-encoder whose config asks for no activation reports its logit.
	identity := func(f fstest.MapFS) {
		cfg := strings.Replace(string(f["config.json"].Data), `"architectures"`, `"sentence_transformers": {"activation_fn": "torch.nn.modules.linear.Identity"}, "architectures"`, 1)
		f["config.json"] = &fstest.MapFile{Data: []byte(cfg)}
	}
	data, _, err = export.ToMemory(context.Background(), fixture(t, "bert-rerank", identity), export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e := decode(t, data).Manifest.Metadata.Encoder; e.Relevance != "" {
		t.Errorf("Identity activation: relevance %q, want none", e.Relevance)
	}
}

func TestEncodeExportRefusesWhatItCannotDo(t *testing.T) {
	for _, tc := range []struct {
		name, fixture string
		change        func(fstest.MapFS)
		opts          export.Options
		want          string
		options       bool // ErrOptions
	}{
		{"rerank of an encoder without a classifier", "bert", nil, export.Options{Task: export.TaskRerank}, "no classification head", true},
		{"unknown task", "bert", nil, export.Options{Task: "translate"}, `task "translate"`, true},
		{"generate an encoder", "bert", nil, export.Options{Task: export.TaskGenerate}, "is an encoder", false},
		{"unknown pooling", "bert", nil, export.Options{Pooling: "weighted"}, `pooling "weighted"`, true},
		{"context beyond the positions", "bert", nil, export.Options{Context: 65}, "takes 1..64", true},
		{"matryoshka reranker", "bert-rerank", nil, export.Options{Matryoshka: true}, "matryoshka", true},
		{"pooling of a reranker", "bert-rerank", nil, export.Options{Pooling: "mean"}, "--pooling", true},
		{"rotation", "bert", nil, export.Options{Rotate: export.RotateHadamard}, "rotation", true},
		{"a module hfstatic does not run", "bert", func(f fstest.MapFS) {
			f["modules.json"] = &fstest.MapFile{Data: []byte(`[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
				{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
				{"idx":2,"name":"2","path":"2_LayerNorm","type":"sentence_transformers.models.LayerNorm"}]`)}
		}, export.Options{}, "LayerNorm, which hfstatic does not run", false},
		{"two pooling modes", "bert", func(f fstest.MapFS) {
			f["1_Pooling/config.json"] = &fstest.MapFile{Data: []byte(`{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}`)}
		}, export.Options{}, "exactly one", false},
		{"weighted mean pooling", "bert", func(f fstest.MapFS) {
			f["1_Pooling/config.json"] = &fstest.MapFile{Data: []byte(`{"pooling_mode_weightedmean_tokens": true}`)}
		}, export.Options{}, "weightedmean", false},
		{"a reranker without its tokenizer", "qwen3-rerank", nil, export.Options{}, "needs its tokenizer.json", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := export.Export(context.Background(), fixture(t, tc.fixture, tc.change), &buf, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, export.ErrOptions) != tc.options {
				t.Errorf("error %v, want one saying %q (ErrOptions %v)", err, tc.want, tc.options)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before refusing", buf.Len())
			}
		})
	}
}

// A Qwen3-Embedding checkpoint saved from the base model keeps its tensors without the
// "model." prefix; a tokenizer hfstatic cannot read yet is kept, with a note.
func TestEncodeExportReadsBaseModelNamesAndKeepsUnreadTokenizers(t *testing.T) {
	ckpt := fixture(t, "qwen3-embed", func(f fstest.MapFS) {
		st, err := safetensors.FromBytes(f["model.safetensors"].Data)
		if err != nil {
			t.Fatal(err)
		}
		var ts []safetensors.WriteTensor
		for _, x := range st.Tensors() {
			raw, err := st.Raw(x)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, safetensors.WriteTensor{Name: strings.TrimPrefix(x.Name, "model."), DType: x.DType, Shape: x.Shape, Data: raw})
		}
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, ts, nil); err != nil {
			t.Fatal(err)
		}
		f["model.safetensors"] = &fstest.MapFile{Data: buf.Bytes()}
		f["tokenizer.json"] = &fstest.MapFile{Data: []byte(`{"model": {"type": "WordLevel", "vocab": {"<unk>": 0}}}`)}
	})
	if _, ok := ckpt.Tensor("embed_tokens.weight"); !ok {
		t.Fatal("the rewritten checkpoint has no embed_tokens.weight")
	}
	data, sum, err := export.ToMemory(context.Background(), ckpt, export.Options{Context: 16})
	if err != nil {
		t.Fatal(err)
	}
	f := decode(t, data)
	if _, ok := f.Manifest.Tensor("model.embed_tokens.weight"); !ok {
		t.Error("the program does not keep the plain names")
	}
	if _, ok := f.Asset(program.AssetTokenizer); !ok || len(sum.Notes) != 1 || !strings.Contains(sum.Notes[0], "token ids only") {
		t.Errorf("tokenizer asset kept %v, notes %q", ok, sum.Notes)
	}
}

// Qwen3-Embedding's model card says its embeddings may be truncated; its config does not.
func TestQwen3EmbeddingsModelCardAllowsFewerDimensions(t *testing.T) {
	card := func(f fstest.MapFS) {
		f["README.md"] = &fstest.MapFile{Data: []byte("---\nlicense: apache-2.0\n---\n# Qwen3-Embedding-0.6B\n")}
	}
	for _, tc := range []struct {
		change func(fstest.MapFS)
		want   bool
	}{{nil, false}, {card, true}} {
		data, _, err := export.ToMemory(context.Background(), fixture(t, "qwen3-embed", tc.change), export.Options{Context: 16})
		if err != nil {
			t.Fatal(err)
		}
		if got := decode(t, data).Manifest.Metadata.Encoder.Matryoshka; got != tc.want {
			t.Errorf("model card %v: matryoshka %v", tc.change != nil, got)
		}
	}
}
