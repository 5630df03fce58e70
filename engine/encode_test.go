package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/exporttest"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// encodeFixtures are the embedding and reranking fixtures with a float64 reference
// (internal/testckpt/testdata/README.md), and the tokens per sequence of their programs.
var encodeFixtures = []struct {
	name    string
	context int
	output  program.EncodeOutput
}{
	{"bert", 48, program.OutputEmbedding},        // BertModel, mean pooling, normalized (all-MiniLM-L6-v2)
	{"bert-dense", 64, program.OutputEmbedding},  // BertModel, CLS, Dense with tanh, normalized
	{"bert-rerank", 64, program.OutputScore},     // BertForSequenceClassification (ms-marco MiniLM)
	{"xlmr", 64, program.OutputEmbedding},        // XLMRobertaModel, CLS, normalized (bge-m3)
	{"xlmr-rerank", 64, program.OutputScore},     // XLMRobertaForSequenceClassification (bge-reranker-v2-m3)
	{"qwen3-embed", 64, program.OutputEmbedding}, // Qwen3-Embedding: last token, normalized
	{"qwen3-rerank", 64, program.OutputScore},    // Qwen3-Reranker: logit(yes) - logit(no)
}

// encodeFolder is fixture name as a folder; the rerankers built on a decoder get Qwen3's
// tokenizer, where the exporter finds "yes" and "no".
func encodeFolder(t testing.TB, name string) fstest.MapFS {
	t.Helper()
	fsys, err := testckpt.Random(name)
	if err != nil {
		t.Fatal(err)
	}
	if name != "qwen3-rerank" {
		return fsys
	}
	out := fstest.MapFS{}
	for k, v := range fsys {
		out[k] = v
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		out[f] = &fstest.MapFile{Data: gunzip(t, "../tokenizer/testdata/qwen3."+f+".gz")}
	}
	return out
}

func gunzip(t testing.TB, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encodeInputs(ref *testckpt.EncodeSummary) []runner.Sequence {
	seqs := make([]runner.Sequence, len(ref.Inputs))
	for i, in := range ref.Inputs {
		seqs[i] = runner.Sequence{IDs: in.IDs, Types: in.Types}
	}
	return seqs
}

func cosine(a []float32, b []float64) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * b[i]
		aa += float64(a[i]) * float64(a[i])
		bb += b[i] * b[i]
	}
	return ab / math.Sqrt(aa*bb)
}

// The embeddings and scores of every model kind, at f32, against a float64 forward pass
// written from transformers' modeling code and sentence-transformers' modules: within 1e-4
// absolute and, for embeddings, a cosine distance within 1e-6 (docs/contract.md, section
// 10). Sequences of 1 to S tokens run in one batch; at q8 every embedding keeps a cosine of
// at least 0.999 to f32's.
func TestEncodersMatchFloat64Reference(t *testing.T) {
	for _, fx := range encodeFixtures {
		t.Run(fx.name, func(t *testing.T) {
			ref, err := testckpt.EncodeReference(fx.name)
			if err != nil {
				t.Fatal(err)
			}
			fsys := encodeFolder(t, fx.name)
			seqs := encodeInputs(ref)
			var f32 [][]float32
			for _, weights := range []string{"f32", "q8"} {
				data := exporttest.Program(t, fsys, export.Options{Context: fx.context, Weights: weights})
				m := loadModel(t, data, 2)
				if m.Encoder == nil {
					t.Fatalf("%s program has no encoder (contract %s)", weights, m.File.Manifest.Metadata.Contract)
				}
				if got := m.Encoder.Metadata().Encoder.Output; got != fx.output {
					t.Fatalf("output %q, want %q", got, fx.output)
				}
				rows, err := m.Encoder.Encode(context.Background(), seqs)
				if err != nil {
					t.Fatal(err)
				}
				if weights == "f32" {
					f32 = rows
					worstAbs, worstCos := 0.0, 0.0
					for i, row := range rows {
						want := ref.Outputs[i]
						if len(row) != len(want) {
							t.Fatalf("input %d: %d values, reference %d", i, len(row), len(want))
						}
						for j := range row {
							worstAbs = max(worstAbs, math.Abs(float64(row[j])-want[j]))
						}
						if fx.output == program.OutputEmbedding {
							worstCos = max(worstCos, 1-cosine(row, want))
						} else if r := 1 / (1 + math.Exp(-float64(row[0]))); math.Abs(r-ref.Relevance[i]) > 1e-4 {
							t.Errorf("input %d: relevance %g, reference %g", i, r, ref.Relevance[i])
						}
					}
					if worstAbs > 1e-4 || worstCos > 1e-6 {
						t.Errorf("f32: worst |diff| %.2g (want ≤ 1e-4), cosine distance %.2g (want ≤ 1e-6)", worstAbs, worstCos)
					}
					t.Logf("f32: worst |diff| %.2g, cosine distance %.2g over %d inputs", worstAbs, worstCos, len(rows))
					continue
				}
				worst, worstScore := 1.0, 0.0
				for i, row := range rows {
					ref64 := make([]float64, len(f32[i]))
					for j, v := range f32[i] {
						ref64[j] = float64(v)
					}
					if fx.output == program.OutputEmbedding {
						worst = min(worst, cosine(row, ref64))
					} else {
						worstScore = max(worstScore, math.Abs(float64(row[0]-f32[i][0])))
					}
				}
				if fx.output == program.OutputEmbedding && worst < 0.999 {
					t.Errorf("q8: cosine to f32 %.5f, want ≥ 0.999", worst)
				}
				t.Logf("q8: worst cosine to f32 %.6f, worst score |diff| %.3g", worst, worstScore)
			}
		})
	}
}

// A sequence's row does not depend on the sequences beside it, nor on how they are packed
// into calls: bit for bit.
func TestEncodeRowsDoNotDependOnTheBatch(t *testing.T) {
	for _, name := range []string{"bert-rerank", "qwen3-embed"} {
		t.Run(name, func(t *testing.T) {
			ref, err := testckpt.EncodeReference(name)
			if err != nil {
				t.Fatal(err)
			}
			data := exporttest.Program(t, encodeFolder(t, name), export.Options{Context: 64, Batch: 4, Weights: "q8"})
			seqs := encodeInputs(ref)
			var base [][]float32
			for _, maxTokens := range []int{0, 64, 100} {
				m, err := Load(data, Options{Threads: 2, MaxEncodeTokens: maxTokens})
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				rows, err := m.Encoder.Encode(context.Background(), seqs)
				if err != nil {
					t.Fatal(err)
				}
				alone := make([][]float32, len(seqs))
				for i := range seqs {
					one, err := m.Encoder.Encode(context.Background(), seqs[i:i+1])
					if err != nil {
						t.Fatal(err)
					}
					alone[i] = one[0]
				}
				if base == nil {
					base = rows
				}
				for i := range rows {
					if fmt.Sprint(rows[i]) != fmt.Sprint(alone[i]) || fmt.Sprint(rows[i]) != fmt.Sprint(base[i]) {
						t.Errorf("max tokens %d: input %d differs alone, in a batch and packed otherwise", maxTokens, i)
					}
				}
			}
		})
	}
}
