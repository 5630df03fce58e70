package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchJSONReportsEveryFieldOfTheEmbeddedModel(t *testing.T) {
	out, _, err := run(t, "", "bench", "--prompt-tokens", "40", "--gen-tokens", "5", "--threads", "1", "--repeat", "2", "--json")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	// Decode into a map too, so a renamed JSON field fails here.
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"prefill_tok_s", "decode_tok_s", "threads", "weights", "program_bytes",
		"load_s", "first_token_s", "prompt_tokens", "gen_tokens", "repeat", "context", "prefill_step",
		"load", "huge_page_bytes", "recached", "batch"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("JSON has no %q field:\n%s", k, out)
		}
	}
	var r benchReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// The embedded program: stories260K exported with context 512, prefill 32, f32 weights.
	if r.Threads != 1 || r.Weights != "f32" || r.Context != 512 || r.PrefillStep != 32 ||
		r.PromptTokens != 40 || r.GenTokens != 5 || r.Repeat != 2 || r.Batch != 1 {
		t.Errorf("report = %+v, want threads 1, weights f32, context 512, prefill step 32, 40 prompt and 5 gen tokens, 2 repeats, batch 1", r)
	}
	if r.Load != "embedded" || r.HugeBytes != 0 || r.Recached {
		t.Errorf("load %q, huge_page_bytes %d, recached %v: want embedded, 0, false", r.Load, r.HugeBytes, r.Recached)
	}
	if r.ProgramBytes < 1<<20 {
		t.Errorf("program_bytes = %d, want the ~1 MB of stories260K's weights at least", r.ProgramBytes)
	}
	if len(r.PrefillRuns) != 2 || len(r.DecodeRuns) != 2 {
		t.Errorf("runs = %v / %v, want 2 each", r.PrefillRuns, r.DecodeRuns)
	}
	if r.PrefillTokS <= 0 || r.DecodeTokS <= 0 {
		t.Errorf("rates prefill %g, decode %g tok/s, want > 0", r.PrefillTokS, r.DecodeTokS)
	}
	if r.LoadS <= 0 || r.FirstTokenS <= r.LoadS {
		t.Errorf("load_s %g, first_token_s %g: want 0 < load < first token", r.LoadS, r.FirstTokenS)
	}
}

func TestBenchDepthFillsTheCacheFirst(t *testing.T) {
	out, _, err := run(t, "", "bench", "--depth", "300", "--prompt-tokens", "40", "--gen-tokens", "5", "--threads", "1", "--repeat", "1", "--json")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var r benchReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Depth != 300 || r.PromptTokens != 40 || r.GenTokens != 5 || r.PrefillTokS <= 0 || r.DecodeTokS <= 0 {
		t.Errorf("report = %+v, want depth 300, 40 prompt and 5 gen tokens, rates > 0", r)
	}
	table, _, err := run(t, "", "bench", "--depth", "300", "--prompt-tokens", "8", "--gen-tokens", "2", "--repeat", "1")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, table)
	}
	if !strings.Contains(table, "depth") || !strings.Contains(table, "300 tokens in the cache") {
		t.Errorf("table does not show the depth:\n%s", table)
	}
}

func TestBenchBatchDecodesSessionsTogether(t *testing.T) {
	out, _, err := run(t, "", "bench", "--batch", "3", "--depth", "20", "--prompt-tokens", "40", "--gen-tokens", "5",
		"--threads", "1", "--repeat", "2", "--json")
	if err != nil {
		t.Fatalf("bench --batch 3: %v\n%s", err, out)
	}
	var r benchReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Batch != 3 || r.Depth != 20 || r.PromptTokens != 40 || r.GenTokens != 5 || r.Repeat != 2 {
		t.Errorf("report = %+v, want batch 3, depth 20, 40 prompt and 5 gen tokens, 2 repeats", r)
	}
	if len(r.PrefillRuns) != 2 || len(r.DecodeRuns) != 2 || r.PrefillTokS <= 0 || r.DecodeTokS <= 0 {
		t.Errorf("runs %v / %v, medians %g / %g: want 2 runs each and rates > 0", r.PrefillRuns, r.DecodeRuns, r.PrefillTokS, r.DecodeTokS)
	}
	table, _, err := run(t, "", "bench", "--batch", "2", "--prompt-tokens", "8", "--gen-tokens", "2", "--repeat", "1")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, table)
	}
	if !strings.Contains(table, "2 sessions together") {
		t.Errorf("table does not show the batch:\n%s", table)
	}
}

func TestBenchPrintsATableByDefault(t *testing.T) {
	out, _, err := run(t, "", "bench", "--prompt-tokens", "8", "--gen-tokens", "2", "--threads", "1", "--repeat", "1")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	for _, want := range []string{"stories260K", "weights f32", "context 512, prefill step 32", "threads", "startup", "prefill", "decode"} {
		if !strings.Contains(out, want) {
			t.Errorf("table has no %q:\n%s", want, out)
		}
	}
}

func TestBenchWritesACPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	if out, _, err := run(t, "", "bench", "--prompt-tokens", "8", "--gen-tokens", "2", "--repeat", "1", "--json", "--cpuprofile", path); err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 {
		t.Error("the CPU profile is empty")
	}
}

func TestBenchRejectsBadRequestsAsUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"prompt past the context", []string{"--prompt-tokens", "500", "--gen-tokens", "64"}, "need 564 positions, but the program's context is 512"},
		{"prompt alone past the context", []string{"--prompt-tokens", "513", "--gen-tokens", "1"}, "context is 512"},
		{"no prompt", []string{"--prompt-tokens", "0"}, "--prompt-tokens 0 must be ≥ 1"},
		{"no decode", []string{"--gen-tokens", "0"}, "--gen-tokens 0 must be ≥ 1"},
		{"no repeat", []string{"--repeat", "0"}, "--repeat 0 must be ≥ 1"},
		{"no threads", []string{"--threads", "0"}, "--threads 0 must be ≥ 1"},
		{"negative depth", []string{"--depth", "-1"}, "--depth -1 must be ≥ 0"},
		{"no batch", []string{"--batch", "0"}, "--batch 0 must be ≥ 1"},
		{"depth past the context", []string{"--depth", "400", "--prompt-tokens", "100", "--gen-tokens", "64"}, "need 564 positions, but the program's context is 512"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := run(t, "", append([]string{"bench"}, tt.args...)...)
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v, want a usage error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.in...)
		if got := median(in); got != tt.want {
			t.Errorf("median(%v) = %g, want %g", tt.in, got, tt.want)
		}
		for i := range in {
			if in[i] != tt.in[i] {
				t.Errorf("median modified its input: %v, was %v", in, tt.in)
			}
		}
	}
}

func TestBenchPromptIsFixedAndInsideTheVocabulary(t *testing.T) {
	a, b := benchPrompt(300, 512), benchPrompt(300, 512)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("prompts differ at %d: %d vs %d", i, a[i], b[i])
		}
		if a[i] < 0 || a[i] >= 512 {
			t.Fatalf("id %d at %d is outside [0,512)", a[i], i)
		}
	}
}
