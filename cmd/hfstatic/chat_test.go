package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/testckpt"
)

// qwen3Folder writes the random Qwen3 checkpoint with the real Qwen3 tokenizer files
// (from the tokenizer package's test data) into a folder.
func qwen3Folder(t *testing.T) string {
	t.Helper()
	fsys, err := testckpt.Random("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, f := range fsys {
		if err := os.WriteFile(filepath.Join(dir, name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		gz, err := os.ReadFile("../../tokenizer/testdata/qwen3." + name + ".gz")
		if err != nil {
			t.Fatal(err)
		}
		r, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestChatRendersTheTemplateAndAnswersEachTurn(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "qwen3.hfs")
	mustRun(t, "export", qwen3Folder(t), "-o", prog, "--context", "256", "--prefill", "32", "-q")
	out, stderr, err := run(t, "Hello there\n/reset\nAnd again\nthird turn\n", "chat", prog, "-n", "4", "--temperature", "0", "--system", "Be brief.")
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, stderr)
	}
	// One prompt per input line and one at the end of input; random weights reply with
	// arbitrary text, so only its presence is checked.
	if got := strings.Count(stderr, "> "); got != 5 || out == "" {
		t.Errorf("chat showed %d prompts (want 5) and printed %q", got, out)
	}
	if _, _, err := run(t, "hi\n", "chat"); err == nil || !strings.Contains(err.Error(), "no chat template") {
		t.Errorf("chat on stories260K: %v, want an error saying there is no chat template", err)
	}
}
