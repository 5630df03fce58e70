package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/models"
)

// run --prompt is one chat turn through the model's chat template (the first turn of chat,
// with the same flags), or with --raw the continuation generate prints; the sampling flags,
// --system and --template-file work as in chat.
func TestRunPromptGoesThroughTheChatTemplate(t *testing.T) {
	fakeHFCache(t, map[string]fs.FS{
		"test/qwen3rand":       os.DirFS(qwen3Folder(t)),
		"karpathy/stories260K": models.Stories260K(),
	})
	// Small explicit export options: the default q8 would calibrate the random Qwen3 first.
	qwen := []string{"test/qwen3rand", "--weights", "f32", "--context", "256", "--prefill", "16", "-q"}
	prog := strings.TrimSpace(mustRun(t, "inspect", "--json", "test/qwen3rand", "--weights", "f32", "--context", "256", "--prefill", "16"))
	if !strings.Contains(prog, `"chat_template": true`) {
		t.Fatalf("the Qwen3 fixture's program has no chat template: %s", prog)
	}
	sampling := []string{"-n", "6", "--temperature", "0.9", "--seed", "7", "--top-k", "0", "--min-p", "0"}
	runOut := func(extra ...string) string {
		t.Helper()
		out, stderr, err := run(t, "", append(append(append([]string{"run"}, qwen...), sampling...), extra...)...)
		if err != nil {
			t.Fatalf("run %s: %v\n%s", strings.Join(extra, " "), err, stderr)
		}
		return out
	}
	chatOut := func(stdin string, extra ...string) string {
		t.Helper()
		args := append([]string{"chat", "test/qwen3rand", "--weights", "f32", "--context", "256", "--prefill", "16"}, sampling...)
		out, stderr, err := run(t, stdin, append(args, extra...)...)
		if err != nil {
			t.Fatalf("chat %s: %v\n%s", strings.Join(extra, " "), err, stderr)
		}
		return out
	}
	templated := runOut("--prompt", "Hello there", "--system", "Be brief.")
	if want := chatOut("Hello there\n", "--system", "Be brief."); templated != want || templated == "" {
		t.Errorf("run --prompt --system printed %q; chat's first reply is %q", templated, want)
	}
	if again := runOut("--prompt", "Hello there", "--system", "Be brief."); again != templated {
		t.Errorf("run with --seed 7 printed %q, then %q", templated, again)
	}
	raw := runOut("--prompt", "Hello there", "--raw")
	want, _, err := run(t, "", append([]string{"generate", "test/qwen3rand", "--weights", "f32", "--context", "256", "--prefill", "16", "--prompt", "Hello there"}, sampling...)...)
	if err != nil || raw != want || raw == templated {
		t.Errorf("run --raw printed %q; generate printed %q (%v); through the template: %q", raw, want, err, templated)
	}
	// A template file replaces the program's.
	tmpl := filepath.Join(t.TempDir(), "t.jinja")
	os.WriteFile(tmpl, []byte("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"), 0o644)
	if got, want := runOut("--prompt", "Hello there", "--template-file", tmpl), chatOut("Hello there\n", "--template-file", tmpl); got != want || got == templated {
		t.Errorf("run --template-file printed %q; chat --template-file %q; the program's template %q", got, want, templated)
	}

	// Without a chat template, --prompt continues the text, as generate does.
	out, stderr, err := run(t, "", "run", "karpathy/stories260K", "--prompt", "Once upon a time", "-n", "5", "--temperature", "0", "-q")
	if err != nil || !strings.HasPrefix(out, ", there was a little") || !strings.Contains(stderr, "no chat template: the prompt is continued as plain text") {
		t.Errorf("run of a model without a template: %v\nstdout %q\nstderr %s", err, out, stderr)
	}
	for _, args := range [][]string{
		{"run", "karpathy/stories260K", "--prompt", "x", "--raw", "--system", "s"},
		{"run", "karpathy/stories260K", "--raw"},
		{"run", "karpathy/stories260K", "--temperature", "-1", "--prompt", "x"},
		{"run", "karpathy/stories260K", "--weights", "q5", "--prompt", "x"},
	} {
		if _, _, err := run(t, "", args...); exitCode(err) != 2 {
			t.Errorf("hfstatic %s: %v, want a usage error", strings.Join(args, " "), err)
		}
	}
}

// serve --template-file gives a program without a chat template the chat API.
func TestServeTemplateFile(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "t.jinja")
	os.WriteFile(tmpl, []byte("{% for m in messages %}{{ m.content }} {% endfor %}"), 0o644)
	base, _ := startServe(t, "serve", "--template-file", tmpl, "--threads", "1")
	code, body := httpPost(t, base+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":5,"temperature":0}`)
	if code != 200 || !strings.Contains(body, `"finish_reason":"length"`) || strings.Contains(body, `"content":""`) {
		t.Errorf("chat through --template-file: %d %s", code, body)
	}
	if _, _, err := run(t, "", "serve", "--template-file", filepath.Join(t.TempDir(), "missing.jinja"), "--addr", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "--template-file") {
		t.Errorf("serve --template-file of a missing file: %v", err)
	}
}
