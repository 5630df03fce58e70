package hfstatic_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/sample"
)

func openEmbedded(t *testing.T) *hfstatic.Model {
	t.Helper()
	m, err := hfstatic.OpenEmbedded(t.Context(), hfstatic.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// Greedy generation from BOS alone gives run.c's story (the CLI's reference text).
func TestGenerateReproducesRunCStory(t *testing.T) {
	want, err := os.ReadFile("cmd/hfstatic/testdata/expected_t0_n200.txt")
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	res, err := openEmbedded(t).Generate(t.Context(), "", hfstatic.GenerateOptions{MaxTokens: 200,
		OnText: func(s string) error { streamed.WriteString(s); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != string(want) || streamed.String() != res.Text {
		t.Errorf("Generate = %q\nstreamed %q\nwant %q", res.Text, streamed.String(), want)
	}
	if len(res.Tokens) != 200 || res.PromptTokens != 1 || res.Reason != generate.StopMaxTokens {
		t.Errorf("%d tokens, %d prompt tokens, reason %s; want 200, 1, max_tokens", len(res.Tokens), res.PromptTokens, res.Reason)
	}
}

func TestGenerateStopsAtAStopString(t *testing.T) {
	res, err := openEmbedded(t).Generate(t.Context(), "Once upon a time", hfstatic.GenerateOptions{MaxTokens: 50, Stop: []string{"Lily"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != ", there was a little girl named " || res.Reason != generate.StopCondition {
		t.Errorf("Generate = %q (%s), want the text before the stop string and reason stop", res.Text, res.Reason)
	}
}

func TestOptionsAreValidated(t *testing.T) {
	if _, err := hfstatic.OpenEmbedded(t.Context(), hfstatic.Options{Threads: -1}); err == nil || !strings.Contains(err.Error(), "Options.Threads -1") {
		t.Errorf("Threads -1: %v, want an error naming Options.Threads", err)
	}
	m := openEmbedded(t)
	if _, err := m.Generate(t.Context(), "a", hfstatic.GenerateOptions{MaxTokens: -3}); err == nil || !strings.Contains(err.Error(), "MaxTokens -3") {
		t.Errorf("MaxTokens -3: %v, want an error naming MaxTokens", err)
	}
	if _, err := m.Generate(t.Context(), "a", hfstatic.GenerateOptions{Sampling: sampleTemperature(-1)}); err == nil || !strings.Contains(err.Error(), "Temperature") {
		t.Errorf("Temperature -1: %v, want an error naming Temperature", err)
	}
}

// Inputs that are not programs say what they are and what to do.
func TestOpenNamesWhatItWasGiven(t *testing.T) {
	dir := t.TempDir()
	gguf := filepath.Join(dir, "model.gguf")
	os.WriteFile(gguf, []byte("GGUF\x03\x00\x00\x00rest"), 0o644)
	for _, c := range []struct {
		name string
		open func() error
		want error
	}{
		{"folder to Open", func() error { _, err := hfstatic.Open("models/stories260K", hfstatic.Options{}); return err }, hfstatic.ErrFolder},
		{"GGUF to Open", func() error { _, err := hfstatic.Open(gguf, hfstatic.Options{}); return err }, hfstatic.ErrGGUF},
		{"GGUF to OpenFolder", func() error { _, err := hfstatic.OpenFolder(t.Context(), gguf, hfstatic.Options{}); return err }, hfstatic.ErrGGUF},
		{"GGUF to Load", func() error { _, err := hfstatic.Load([]byte("GGUF\x03\x00\x00\x00"), hfstatic.Options{}); return err }, hfstatic.ErrGGUF},
	} {
		if err := c.open(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// A cancelled reply keeps what it said, and the conversation goes on from there.
func TestChatContinuesAfterACancelledReply(t *testing.T) {
	c, err := openEmbedded(t).NewChat(hfstatic.ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(t.Context())
	pieces := 0
	res, err := c.Send(ctx, "Once upon a time", hfstatic.GenerateOptions{MaxTokens: 100, OnText: func(string) error {
		if pieces++; pieces == 5 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) || res.Text == "" || len(res.Tokens) > 6 {
		t.Fatalf("cancelled Send: %q, %d tokens, %v; want some text, at most 6 tokens, context.Canceled", res.Text, len(res.Tokens), err)
	}
	res2, err := c.Send(t.Context(), "The end.", hfstatic.GenerateOptions{MaxTokens: 5})
	if err != nil || len(res2.Tokens) != 5 {
		t.Fatalf("Send after a cancelled one: %d tokens, %v", len(res2.Tokens), err)
	}
	msgs := c.Messages()
	if len(msgs) != 4 || msgs[1].Content != res.Text || msgs[2].Content != "The end." {
		t.Errorf("messages %+v, want the cancelled reply kept", msgs)
	}
	if err := c.Reset(); err != nil || len(c.Messages()) != 0 || c.Tokens() != 0 {
		t.Errorf("Reset: %v, %d messages, %d tokens", err, len(c.Messages()), c.Tokens())
	}
}

// qwen3 is the random Qwen3 checkpoint with Qwen3's real tokenizer and chat template.
func qwen3(t *testing.T) fstest.MapFS {
	t.Helper()
	fsys, err := testckpt.Random("qwen3")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		gz, err := os.ReadFile("tokenizer/testdata/qwen3." + name + ".gz")
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
		fsys[name] = &fstest.MapFile{Data: b}
	}
	return fsys
}

// With a chat template, each turn runs only the tokens the conversation gained, and the
// one-shot Chat renders the same prompt as a conversation's first turn.
func TestChatRendersTheTemplateAndKeepsTheCache(t *testing.T) {
	m, err := hfstatic.LoadCheckpoint(t.Context(), qwen3(t), hfstatic.Options{Threads: 2, Export: hfstatic.ExportOptions{Context: 256, Prefill: 16}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c, err := m.NewChat(hfstatic.ChatOptions{System: "Be brief."})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Templated() {
		t.Fatal("Qwen3's chat is not templated")
	}
	opts := hfstatic.GenerateOptions{MaxTokens: 4}
	first, err := c.Send(t.Context(), "Hello there", opts)
	if err != nil {
		t.Fatal(err)
	}
	once, err := m.Chat(t.Context(), []hfstatic.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello there"}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if once.Text != first.Text || once.PromptTokens != first.PromptTokens {
		t.Errorf("Chat = %q from %d prompt tokens, the conversation's first turn %q from %d", once.Text, once.PromptTokens, first.Text, first.PromptTokens)
	}
	second, err := c.Send(t.Context(), "And again", opts)
	if err != nil {
		t.Fatal(err)
	}
	// The session holds kept + new prompt tokens + the reply (its last token not appended).
	if kept := c.Tokens() - second.PromptTokens - (len(second.Tokens) - 1); kept < first.PromptTokens-1 {
		t.Errorf("the second turn kept %d cached tokens and ran %d, want all but the last of the first turn's %d (it merges with the reply's text) kept", kept, second.PromptTokens, first.PromptTokens)
	}
}

func sampleTemperature(t float32) sample.Options { return sample.Options{Temperature: t} }

// A named template the program does not have is an error, never plain continuation.
// (A broken template never gets into a program: export refuses it.)
func TestNewChatRefusesATemplateItDoesNotHave(t *testing.T) {
	c, err := openEmbedded(t).NewChat(hfstatic.ChatOptions{TemplateName: "tool_use"})
	if err == nil {
		c.Close()
		t.Fatal("NewChat accepted a template name the program does not have")
	}
	if !strings.Contains(err.Error(), `"tool_use"`) {
		t.Errorf("NewChat: %v, want an error naming the template", err)
	}
}

// Generations on one model run side by side, each in its own session.
func TestGenerateConcurrently(t *testing.T) {
	m := openEmbedded(t)
	want, err := m.Generate(t.Context(), "Once upon a time", hfstatic.GenerateOptions{MaxTokens: 30})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			var res hfstatic.Result
			res, errs[i] = m.Generate(t.Context(), "Once upon a time", hfstatic.GenerateOptions{MaxTokens: 30})
			got[i] = res.Text
		})
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != want.Text {
			t.Errorf("generation %d: %q, %v; want %q", i, got[i], errs[i], want.Text)
		}
	}
}
