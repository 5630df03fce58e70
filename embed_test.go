package hfstatic_test

import (
	"errors"
	"math"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/internal/testckpt"
)

// withQwen3Tokenizer is an embedding or reranking fixture with Qwen3's tokenizer.
func withQwen3Tokenizer(t *testing.T, fixture string) fstest.MapFS {
	t.Helper()
	fsys, err := testckpt.Random(fixture)
	if err != nil {
		t.Fatal(err)
	}
	tok := qwen3(t)
	out := fstest.MapFS{"tokenizer.json": tok["tokenizer.json"], "tokenizer_config.json": tok["tokenizer_config.json"]}
	for k, v := range fsys {
		out[k] = v
	}
	return out
}

func TestEmbedAndRerankThroughTheGoAPI(t *testing.T) {
	ctx := t.Context()
	emb, err := hfstatic.LoadCheckpoint(ctx, withQwen3Tokenizer(t, "qwen3-embed"), hfstatic.Options{Threads: 2, Export: hfstatic.ExportOptions{Context: 64}})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	vecs, err := emb.Embed(ctx, "A man is eating food.", "A man is riding a horse.")
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 2 || len(vecs[0]) != 64 {
		t.Fatalf("%d vectors of %d values, want 2 of 64", len(vecs), len(vecs[0]))
	}
	var norm float64
	for _, v := range vecs[0] {
		norm += float64(v) * float64(v)
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Errorf("embedding norm² %g, want 1 (the model normalizes)", norm)
	}
	if _, err := emb.Rerank(ctx, "q", "d"); err == nil {
		t.Error("Rerank of an embedding model succeeded")
	}
	if _, err := emb.Generate(ctx, "hi", hfstatic.GenerateOptions{}); !errors.Is(err, hfstatic.ErrNotGenerative) {
		t.Errorf("Generate of an embedding model: %v, want ErrNotGenerative", err)
	}
	if _, err := emb.NewChat(hfstatic.ChatOptions{}); !errors.Is(err, hfstatic.ErrNotGenerative) {
		t.Errorf("NewChat of an embedding model: %v, want ErrNotGenerative", err)
	}

	rr, err := hfstatic.LoadCheckpoint(ctx, withQwen3Tokenizer(t, "qwen3-rerank"), hfstatic.Options{Threads: 2, Export: hfstatic.ExportOptions{Context: 128}})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	ranked, err := rr.Rerank(ctx, "What is the capital of France?", "Paris.", "Bananas.", "Rome.")
	if err != nil {
		t.Fatal(err)
	}
	if len(ranked) != 3 || ranked[0].Relevance < ranked[2].Relevance || ranked[0].Relevance <= 0 || ranked[0].Relevance >= 1 {
		t.Errorf("ranking %+v", ranked)
	}

	gen := openEmbedded(t)
	if _, err := gen.Embed(ctx, "hello"); !errors.Is(err, hfstatic.ErrNotEncoder) {
		t.Errorf("Embed of a generative model: %v, want ErrNotEncoder", err)
	}
	if _, err := gen.Rerank(ctx, "q", "d"); !errors.Is(err, hfstatic.ErrNotEncoder) {
		t.Errorf("Rerank of a generative model: %v, want ErrNotEncoder", err)
	}
}
