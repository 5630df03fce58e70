package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/testckpt"
)

// encodeFixtureDir writes fixture name (an embedding or reranking checkpoint) with Qwen3's
// tokenizer into a temporary folder.
func encodeFixtureDir(t *testing.T, name string) string {
	return encodeFixtureDirWith(t, name, "qwen3")
}

// encodeFixtureDirWith writes fixture name with tokenizer/testdata's tokenizer tok.
func encodeFixtureDirWith(t *testing.T, name, tok string) string {
	t.Helper()
	fsys, err := testckpt.Random(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	for p, f := range fsys {
		path := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		gz, err := os.ReadFile("../../tokenizer/testdata/" + tok + "." + f + ".gz")
		if errors.Is(err, os.ErrNotExist) && f == "tokenizer_config.json" && tok != "qwen3" {
			continue // the encoders' test tokenizers have none
		}
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type embedLine struct {
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}

func embedLines(t *testing.T, out string) []embedLine {
	t.Helper()
	var lines []embedLine
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l embedLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

func TestExportEmbedRerankInspectBench(t *testing.T) {
	dir := t.TempDir()
	emb := filepath.Join(dir, "emb.hfs")
	out := mustRun(t, "export", encodeFixtureDir(t, "qwen3-embed"), "-o", emb, "--context", "64", "--batch", "4", "--matryoshka", "-q")
	if !strings.Contains(out, "methods encode (embed)") || !strings.Contains(out, "last pooling, normalized → embedding of 64") {
		t.Errorf("export said %q", out)
	}
	lines := embedLines(t, mustRun(t, "embed", emb, "--text", "A cat.", "--text", "雨", "--threads", "2"))
	if len(lines) != 2 || lines[1].Index != 1 || len(lines[0].Embedding) != 64 {
		t.Fatalf("embed printed %+v", lines)
	}
	var norm float64
	for _, v := range lines[0].Embedding {
		norm += float64(v) * float64(v)
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Errorf("embedding norm² %g", norm)
	}
	// Standard input's lines give the same vectors.
	stdout, stderr, err := run(t, "A cat.\n\n雨\n", "embed", emb, "--threads", "2")
	if err != nil {
		t.Fatalf("embed from stdin: %v\n%s", err, stderr)
	}
	if got := embedLines(t, stdout); len(got) != 2 || got[1].Embedding[7] != lines[1].Embedding[7] {
		t.Errorf("embed from standard input printed %d lines, or other vectors", len(got))
	}
	if got := embedLines(t, mustRun(t, "embed", emb, "--text", "A cat.", "--dimensions", "8")); len(got[0].Embedding) != 8 {
		t.Errorf("--dimensions 8 printed %d values", len(got[0].Embedding))
	}
	if _, _, err := run(t, "", "embed", emb, "--text", strings.Repeat("word ", 100)); err == nil || !strings.Contains(err.Error(), "truncate") {
		t.Errorf("a long text: %v, want an error saying to truncate", err)
	}
	if _, _, err := run(t, "", "embed", emb, "--text", strings.Repeat("word ", 100), "--truncate"); err != nil {
		t.Errorf("a long text with --truncate: %v", err)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(mustRun(t, "inspect", emb, "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Contract != "hf_encode" || rep.Encoder == nil || rep.Encoder.Dim != 64 || rep.Encoder.Batch != 4 || !rep.Encoder.Matryoshka {
		t.Errorf("inspect: contract %s, encoder %+v", rep.Contract, rep.Encoder)
	}
	var br benchReport
	if err := json.Unmarshal([]byte(mustRun(t, "bench", emb, "--sentences", "6", "--prompt-tokens", "16", "--repeat", "2", "--threads", "2", "--json")), &br); err != nil {
		t.Fatal(err)
	}
	if br.Sentences != 6 || br.SentencesS <= 0 || len(br.SentencesRuns) != 2 {
		t.Errorf("bench: %+v", br)
	}
	if out := mustRun(t, "bench", emb, "--sentences", "2", "--prompt-tokens", "8", "--repeat", "1"); !strings.Contains(out, "median sentences/s") {
		t.Errorf("bench printed %q", out)
	}
	// A generative command refuses it, and embed refuses a generative program.
	if _, _, err := run(t, "", "generate", emb, "--prompt", "hi"); !errors.Is(err, errEncoderProgram) {
		t.Errorf("generate of an embedding program: %v", err)
	}
	if _, _, err := run(t, "", "embed", "", "--text", "hi"); err == nil || !strings.Contains(err.Error(), "generates text") {
		t.Errorf("embed of the default (generative) model: %v", err)
	}

	rr := filepath.Join(dir, "rr.hfs")
	out = mustRun(t, "export", encodeFixtureDir(t, "qwen3-rerank"), "-o", rr, "--context", "128", "-q")
	if !strings.Contains(out, "methods encode (rerank)") {
		t.Errorf("export said %q", out)
	}
	stdout, stderr, err = run(t, "Paris.\nBananas.\nRome.\n", "rerank", rr, "--query", "capital of France?", "--top-n", "2")
	if err != nil {
		t.Fatalf("rerank: %v\n%s", err, stderr)
	}
	var ranked []struct {
		Index     int     `json:"index"`
		Relevance float64 `json:"relevance_score"`
		Document  string  `json:"document"`
	}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r struct {
			Index     int     `json:"index"`
			Relevance float64 `json:"relevance_score"`
			Document  string  `json:"document"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		ranked = append(ranked, r)
	}
	if len(ranked) != 2 || ranked[0].Relevance < ranked[1].Relevance || ranked[0].Document == "" {
		t.Errorf("rerank printed %q", stdout)
	}
	if _, _, err := run(t, "", "embed", rr, "--text", "x"); err == nil {
		t.Error("embed of a reranking program succeeded")
	}
}

// A BERT embedding model and a BERT cross-encoder take text through their WordPiece
// tokenizer: embed, rerank and run print what encode/testdata's float64 reference computed
// on the tokens Hugging Face's tokenizers library gave the same texts.
func TestEmbedAndRerankBERTText(t *testing.T) {
	var ref, rref struct {
		Inputs []struct {
			Text string `json:"text"`
			B    string `json:"b"`
		} `json:"inputs"`
		Outputs [][]float64 `json:"outputs"`
	}
	for p, r := range map[string]any{"bert": &ref, "bert-rerank": &rref} {
		raw, err := os.ReadFile("../../encode/testdata/" + p + ".text64.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, r); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HFSTATIC_HOME", t.TempDir())
	dir := t.TempDir()
	bert := encodeFixtureDirWith(t, "bert", "bert-uncased")
	emb := filepath.Join(dir, "bert.hfs")
	mustRun(t, "export", bert, "-o", emb, "--context", "48", "-q")
	near := func(what string, got []float32, want []float64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
		}
		for j := range want {
			if math.Abs(float64(got[j])-want[j]) > 1e-4 {
				t.Fatalf("%s: value %d is %g, the reference %g", what, j, got[j], want[j])
			}
		}
	}
	for _, i := range []int{0, 3, 7} {
		lines := embedLines(t, mustRun(t, "embed", emb, "--text", ref.Inputs[i].Text, "--threads", "2"))
		near("embed "+ref.Inputs[i].Text, lines[0].Embedding, ref.Outputs[i])
	}
	// run on the folder exports it once and embeds the prompt.
	lines := embedLines(t, mustRun(t, "run", bert, "--prompt", ref.Inputs[3].Text, "-q", "--weights", "f32"))
	near("run --prompt", lines[0].Embedding, ref.Outputs[3])

	rr := filepath.Join(dir, "bert-rerank.hfs")
	reranker := encodeFixtureDirWith(t, "bert-rerank", "bert-uncased")
	mustRun(t, "export", reranker, "-o", rr, "--context", "33", "-q")
	in := rref.Inputs[1]
	want := 1 / (1 + math.Exp(-rref.Outputs[1][0]))
	relevance := func(out string) float64 {
		t.Helper()
		var r struct {
			Relevance float64 `json:"relevance_score"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil {
			t.Fatal(err)
		}
		return r.Relevance
	}
	if got := relevance(mustRun(t, "rerank", rr, "--query", in.Text, "--doc", in.B)); math.Abs(got-want) > 1e-4 {
		t.Errorf("rerank: relevance %g, the reference's sigmoid(logit) %g", got, want)
	}

	// By model name, from the Hugging Face cache, exported once into the program cache.
	fakeHFCache(t, map[string]fs.FS{"sentence-transformers/mini-bert": os.DirFS(bert), "cross-encoder/mini-bert": os.DirFS(reranker)})
	lines = embedLines(t, mustRun(t, "embed", "sentence-transformers/mini-bert", "--weights", "f32", "--text", ref.Inputs[3].Text))
	near("embed NAME", lines[0].Embedding, ref.Outputs[3])
	if got := relevance(mustRun(t, "rerank", "cross-encoder/mini-bert", "--weights", "f32", "--query", in.Text, "--doc", in.B)); math.Abs(got-want) > 1e-4 {
		t.Errorf("rerank NAME: relevance %g, the reference's sigmoid(logit) %g", got, want)
	}
	if _, _, err := run(t, "", "embed", emb, "--weights", "f32", "--text", "x"); err == nil || !strings.Contains(err.Error(), "--weights") {
		t.Errorf("embed PROGRAM --weights: %v, want a usage error naming --weights", err)
	}
}
