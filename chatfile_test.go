package hfstatic_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/models"
)

// A conversation saved and loaded into a new Chat continues as if it had never stopped; a
// damaged file changes nothing.
func TestChatSaveLoadContinues(t *testing.T) {
	m := openEmbedded(t)
	opts := hfstatic.GenerateOptions{MaxTokens: 6}
	a, err := m.NewChat(hfstatic.ChatOptions{System: "Once upon a time"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Send(t.Context(), "Lily", opts); err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if err := a.Save(&file); err != nil {
		t.Fatal(err)
	}
	want, err := a.Send(t.Context(), "Tom", opts)
	if err != nil {
		t.Fatal(err)
	}

	b, err := m.NewChat(hfstatic.ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Damaged files: the conversation stays empty.
	data := file.Bytes()
	for name, bad := range map[string][]byte{
		"no header":       []byte("hello\n"),
		"other version":   bytes.Replace(data, []byte(`"version":1`), []byte(`"version":9`), 1),
		"truncated state": data[:len(data)-10],
		"unknown role":    bytes.Replace(data, []byte(`"role":"user"`), []byte(`"role":"tool"`), 1),
	} {
		if _, err := b.Load(bytes.NewReader(bad)); !errors.Is(err, hfstatic.ErrChatFile) {
			t.Errorf("%s: Load = %v, want ErrChatFile", name, err)
		}
		if len(b.Messages()) != 0 || b.Tokens() != 0 {
			t.Errorf("%s: a failed Load left %d messages, %d tokens", name, len(b.Messages()), b.Tokens())
		}
	}
	restored, err := b.Load(bytes.NewReader(data))
	if err != nil || !restored {
		t.Fatalf("Load = %v, %v", restored, err)
	}
	if diff := cmp.Diff(a.Messages()[:3], b.Messages()); diff != "" {
		t.Errorf("loaded messages (-want +got):\n%s", diff)
	}
	tokens := b.Tokens()
	got, err := b.Send(t.Context(), "Tom", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != want.Text || got.PromptTokens != want.PromptTokens {
		t.Errorf("after Load the reply is %q (%d new prompt tokens), want %q (%d)", got.Text, got.PromptTokens, want.Text, want.PromptTokens)
	}
	if tokens == 0 {
		t.Error("Load restored no tokens")
	}
	// Reset keeps the loaded system message.
	if err := b.Reset(); err != nil || len(b.Messages()) != 1 || b.Messages()[0].Content != "Once upon a time" {
		t.Errorf("Reset after Load: %v, %+v", err, b.Messages())
	}
}

// A file saved from another program loads its messages, which run again at the next Send.
func TestChatLoadFromAnotherProgram(t *testing.T) {
	a, err := openEmbedded(t).NewChat(hfstatic.ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Send(t.Context(), "Lily", hfstatic.GenerateOptions{MaxTokens: 4}); err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if err := a.Save(&file); err != nil {
		t.Fatal(err)
	}
	other, err := hfstatic.LoadCheckpoint(t.Context(), models.Stories260K(), hfstatic.Options{Export: hfstatic.ExportOptions{Context: 128}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	b, err := other.NewChat(hfstatic.ChatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	restored, err := b.Load(&file)
	if err != nil || restored || len(b.Messages()) != 2 || b.Tokens() != 0 {
		t.Fatalf("Load of another program's file = %v, %v; %d messages, %d tokens; want the 2 messages and no tokens", restored, err, len(b.Messages()), b.Tokens())
	}
	res, err := b.Send(t.Context(), "Tom", hfstatic.GenerateOptions{MaxTokens: 4})
	if err != nil || res.PromptTokens <= 2 {
		t.Errorf("the next Send ran %d prompt tokens (%v), want the whole conversation", res.PromptTokens, err)
	}
}
