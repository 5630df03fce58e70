package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	if out := mustRun(t, "inspect", prog); !strings.Contains(out, "chat template   embedded\n") {
		t.Errorf("inspect of a Qwen3 program does not say its chat template is embedded:\n%s", out)
	}
	out, stderr, err := run(t, "Hello there\n/reset\nAnd again\nthird turn\n", "chat", prog, "-n", "4", "--temperature", "0", "--system", "Be brief.")
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, stderr)
	}
	// One prompt per input line and one at the end of input; random weights reply with
	// arbitrary text, so only its presence is checked.
	if got := strings.Count(stderr, "> "); got != 5 || out == "" {
		t.Errorf("chat showed %d prompts (want 5) and printed %q", got, out)
	}
}

// A program without a chat template chats as plain continuation, and says so once.
func TestChatWithoutATemplateContinuesTheText(t *testing.T) {
	out, stderr, err := run(t, "Once upon a time\nLily\n", "chat", "-n", "8", "--temperature", "0")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(stderr, "has no chat template"); n != 1 || !strings.HasPrefix(out, ", there was a little girl\n") {
		t.Errorf("chat said %d times that there is no template and replied %q; stderr %q", n, out, stderr)
	}
}

// The banner names /help; commands are answered and never sent to the model.
func TestChatCommands(t *testing.T) {
	in := "/help\n/frobnicate\n/set temperature 0\n/set top-p 7\n/set max-tokens 5\nOnce upon a time\n/show\n/reset\n/show\n//x\n/bye\nnot read\n"
	out, stderr, err := run(t, in, "chat", "--seed", "3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"chatting with stories260K (embedded): /help for commands, Ctrl-C stops a reply, /bye exits\n",
		"  /set temperature T",
		"unknown command /frobnicate (not sent to the model): /help lists the commands",
		"set temperature to 0\n",
		"/set top-p 7: sample: Options.TopP = 7: must be in (0, 1]",
		"set max-tokens to 5\n",
		"context      9 of 512 tokens used, 2 messages\n", // BOS, 4 prompt tokens, 4 of the 5 generated (the last is not run)
		"parameters   temperature 0, top-k 40, top-p 0.95, min-p 0.05, repeat-penalty 1, seed 3, max-tokens 5\n",
		"(conversation cleared)\n",
		"context      0 of 512 tokens used, 0 messages\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("chat's stderr lacks %q:\n%s", want, stderr)
		}
	}
	// Two replies: the story's, and the one to "/x" sent with "//x"; nothing for commands.
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 2 || lines[0] != ", there was a little" {
		t.Errorf("chat printed %q, want two replies, the first \", there was a little\"", out)
	}
}

// Ctrl-C during a reply stops the reply and returns to the prompt; twice at the prompt exits
// with no error. The input is a pipe, so the test decides when each line arrives.
func TestChatCtrlCStopsTheReplyThenExits(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	var stderr syncBuffer
	first := true
	out := writerFunc(func(p []byte) (int, error) {
		if first { // the reply has begun: press Ctrl-C
			first = false
			if !interrupt() {
				t.Error("chat takes no Ctrl-C")
			}
		}
		return len(p), nil
	})
	root := newRoot()
	root.SetArgs([]string{"chat", "-n", "400", "--temperature", "0"})
	root.SetIn(inR)
	root.SetOut(out)
	root.SetErr(&stderr)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(t.Context()) }()
	waitFor(t, &stderr, "> ", 1)
	io.WriteString(inW, "Once upon a time\n")
	waitFor(t, &stderr, "(reply stopped)\n> ", 1)
	io.WriteString(inW, "/show\n")
	waitFor(t, &stderr, "> ", 3)
	if s := stderr.String(); !strings.Contains(s, "context      ") || strings.Contains(s, "context      512") {
		t.Errorf("after a stopped reply /show said %q", s)
	}
	interrupt()
	waitFor(t, &stderr, "(Ctrl-C again, Ctrl-D or /bye to exit)\n> ", 1)
	interrupt()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("chat ended with %v, want no error (exit 0)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("chat did not end after a second Ctrl-C at the prompt")
	}
	if interrupts.Load() != nil {
		t.Error("chat left its Ctrl-C handler installed")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// waitFor waits until s holds n copies of sub.
func waitFor(t *testing.T, s *syncBuffer, sub string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(s.String(), sub) < n {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %d × %q; have %q", n, sub, s.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// --template-file gives a program without a chat template one.
func TestChatTemplateFile(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "t.jinja")
	os.WriteFile(tmpl, []byte("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"), 0o644)
	_, stderr, err := run(t, "Once upon a time\n/show\n", "chat", "--template-file", tmpl, "-n", "3", "--temperature", "0")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr, "no chat template") || !strings.Contains(stderr, "(embedded), chat template\n") {
		t.Errorf("chat with --template-file said %q", stderr)
	}
}

// A line ending in \ continues on the next; """ starts and ends a message of several lines;
// /save writes the messages and the session, which /load restores in a new chat; /show
// shows the system message.
func TestChatMultiLineSaveAndLoad(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "conv.chat")
	in := "Once upon \\\na time\n\"\"\"\nLily\n\nand Tom\"\"\"\n/save " + saved + "\n/show\n"
	out1, stderr, err := run(t, in, "chat", "-n", "4", "--temperature", "0", "--system", "Stories.\nShort ones.")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"... ", "(saved 5 messages and ", "system       Stories.\n             Short ones.\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("chat's stderr lacks %q:\n%s", want, stderr)
		}
	}
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(string(b), "\n")
	wantMsgs := `"messages":[{"role":"system","content":"Stories.\nShort ones."},{"role":"user","content":"Once upon \na time"},{"role":"assistant","content":`
	if !strings.Contains(header, wantMsgs) || !strings.Contains(header, `{"role":"user","content":"Lily\n\nand Tom"}`) {
		t.Errorf("the saved conversation's header is %s", header)
	}
	if st, _ := os.Stat(saved); st.Mode().Perm() != 0o644 {
		t.Errorf("/save wrote mode %v, want 0644", st.Mode().Perm())
	}

	// Loaded into a new chat (whose --system it replaces), the conversation continues where
	// it stopped: the same reply as the chat that never stopped.
	_, stderr, err = run(t, "/load "+saved+"\n/show\n", "chat", "-n", "4", "--temperature", "0", "--system", "Other.")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(loaded 5 messages and ", "system       Stories.\n", ", 5 messages\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("after /load, chat's stderr lacks %q:\n%s", want, stderr)
		}
	}
	cont, _, err := run(t, "/load "+saved+"\nThe end\n", "chat", "-n", "4", "--temperature", "0")
	if err != nil {
		t.Fatal(err)
	}
	whole, _, err := run(t, in+"The end\n", "chat", "-n", "4", "--temperature", "0", "--system", "Stories.\nShort ones.")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(whole, cont) || cont == "" || !strings.HasPrefix(whole, out1) {
		t.Errorf("after /load the chat replied %q; the chat that went on replied %q", cont, whole)
	}

	// Another program's file brings its messages, run again with the next message; a file
	// that is no conversation is refused and the chat goes on.
	prog := filepath.Join(dir, "s.hfs")
	mustRun(t, "export", "-o", prog, "--context", "256", "-q")
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("not a conversation\n"), 0o644)
	_, stderr, err = run(t, "/load "+saved+"\n/load "+garbage+"\n/load "+filepath.Join(dir, "missing")+"\n/show\n", "chat", prog, "-n", "4")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(loaded 5 messages from " + saved + "; it was saved from another program", "/load: " + garbage + ": not a conversation file", "/load: open ", "0 of 256 tokens used, 5 messages"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("chat's stderr lacks %q:\n%s", want, stderr)
		}
	}
	if _, stderr, _ = run(t, "/save "+filepath.Join(dir, "missing", "x")+"\n", "chat"); !strings.Contains(stderr, "/save: cannot write "+filepath.Join(dir, "missing", "x")) {
		t.Errorf("/save into a missing folder said %q", stderr)
	}
}
