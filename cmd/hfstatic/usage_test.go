package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every mistake in how hfstatic is called exits with 2, before any work is done.
func TestUsageErrorsExitTwo(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "s.hfs")
	mustRun(t, "export", "-o", prog, "--context", "64", "-q")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate" (hfstatic --help lists the commands)`},
		{"misspelt command", []string{"generat", "--prompt", "hi"}, `unknown command "generat" (did you mean generate?`},
		{"too many programs", []string{"generate", prog, prog, "--prompt", "hi"}, "accepts at most 1 arg(s), received 2"},
		{"inspect of two", []string{"inspect", prog, prog}, "usage: hfstatic inspect [PROGRAM]"},
		{"run without a model", []string{"run"}, "accepts 1 arg(s), received 0"},
		{"pull of two", []string{"pull", "a/b", "c/d"}, "accepts 1 arg(s), received 2"},
		{"list with an argument", []string{"list", "x"}, "unknown command"},
		{"accuracy of nothing", []string{"accuracy"}, "give the CANDIDATE program to compare"},
		{"accuracy of three", []string{"accuracy", prog, prog, prog}, "accepts between 1 and 2 arg(s), received 3"},
		{"bad flag value", []string{"generate", "-n", "many"}, `invalid argument "many" for "-n, --max-tokens"`},
		{"unknown flag", []string{"serve", "--port", "80"}, "unknown flag: --port"},
		// --load used to be read only when a program file was opened: the embedded model
		// ignored it.
		{"bad --load with the embedded model", []string{"generate", "--load", "bogus", "--prompt", "hi"}, `--load "bogus": want mmap, mmap-plain or copy`},
		{"bad --load with tokenize", []string{"tokenize", "--load", "bogus", "--text", "hi"}, `--load "bogus"`},
		{"bad --executor", []string{"inspect", "--executor", "gpu"}, `--executor "gpu": want go or ort`},
		{"--text with --jsonl", []string{"tokenize", "--text", "a", "--jsonl"}, "pass one"},
		{"output is a folder", []string{"export", "-o", t.TempDir()}, "is a folder: give the program file's path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := run(t, "", c.args...)
			if code := exitCode(err); code != 2 || !strings.Contains(err.Error(), c.want) {
				t.Errorf("hfstatic %s: exit %d, %v; want exit 2 and a message containing %q", strings.Join(c.args, " "), code, err, c.want)
			}
			if out != "" {
				t.Errorf("hfstatic %s printed %q before failing", strings.Join(c.args, " "), out)
			}
		})
	}
}

// tokenize reads plain text from standard input (echo's final newline dropped), and JSON
// lines with --jsonl or when every line is a JSON string (scripts written before --jsonl).
func TestTokenizeReadsStandardInput(t *testing.T) {
	want := mustRun(t, "tokenize", "--text", "Once upon a time")
	for _, c := range []struct {
		name, stdin string
		args        []string
		want        string
		note        bool
	}{
		{"plain text", "Once upon a time\n", nil, want, false},
		{"plain text, no newline", "Once upon a time", nil, want, false},
		{"several lines of text", "Once upon\na time\n", nil, mustRun(t, "tokenize", "--text", "Once upon\na time"), false},
		{"JSON lines, --jsonl", "\"Once upon a time\"\n\"Once upon a time\"\n", []string{"--jsonl"}, want + want, false},
		{"JSON lines, detected", "\"Once upon a time\"\n\n\"Once upon a time\"\n", nil, want + want, true},
		{"JSON lines read as text", "\"a\"\n", []string{"--jsonl=false"}, mustRun(t, "tokenize", "--text", `"a"`), false},
		{"text that merely starts with a quote", "\"a\" said Lily\n", nil, mustRun(t, "tokenize", "--text", `"a" said Lily`), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, err := run(t, c.stdin, append([]string{"tokenize"}, c.args...)...)
			if err != nil || out != c.want {
				t.Errorf("tokenize printed %q (%v), want %q", out, err, c.want)
			}
			if note := strings.Contains(stderr, "as JSON lines"); note != c.note {
				t.Errorf("tokenize's note %q: present %v, want %v", stderr, note, c.note)
			}
		})
	}
	if _, _, err := run(t, "\"a\"\nnot json\n", "tokenize", "--jsonl"); err == nil || !strings.Contains(err.Error(), "stdin value 2: want a JSON string per line") {
		t.Errorf("tokenize --jsonl of a bad line: %v", err)
	}
}

// export writes programs readable by everyone (0644, not CreateTemp's 0600), and a path in a
// folder that does not exist is named, never the temporary file.
func TestExportWritesReadableFilesAndNamesMissingFolders(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "s.hfs")
	_, stderr, err := run(t, "", "export", "-o", prog, "--context", "1024", "--prefill", "16", "-q")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(prog)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("export wrote %v (%v), want mode 0644", st.Mode(), err)
	}
	// stories260K was trained on 512 positions.
	if !strings.Contains(stderr, "warning: --context 1024 is past the 512 positions stories260K was trained on") {
		t.Errorf("export --context 1024 of stories260K warned %q", stderr)
	}
	if _, stderr, _ := run(t, "", "export", "-o", prog, "--context", "512", "-q"); strings.Contains(stderr, "warning") {
		t.Errorf("export --context 512 warned %q", stderr)
	}
	missing := filepath.Join(dir, "missing", "x.hfs")
	_, _, err = run(t, "", "export", "-o", missing, "-q")
	if err == nil || !strings.Contains(err.Error(), "cannot write "+missing+": the folder "+filepath.Dir(missing)+" does not exist") || strings.Contains(err.Error(), ".hfstatic-export") {
		t.Errorf("export into a missing folder: %v", err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".hfstatic-export-*")); len(leftovers) > 0 {
		t.Errorf("export left %v", leftovers)
	}
}

// accuracy takes the embedded model as its reference, and refuses programs of two models.
func TestAccuracyWithTheEmbeddedModel(t *testing.T) {
	q8 := filepath.Join(t.TempDir(), "q8.hfs")
	mustRun(t, "export", "-o", q8, "--weights", "q8", "--calibrate", "none", "-q")
	out := mustRun(t, "accuracy", q8, "--generate", "8")
	if !strings.HasPrefix(out, "stories260K (embedded) (f32) vs "+q8+" (q8, ") || !strings.Contains(out, "argmax agreement") {
		t.Errorf("accuracy CANDIDATE printed %q", out)
	}
	qwen := filepath.Join(t.TempDir(), "qwen.hfs")
	mustRun(t, "export", qwen3Folder(t), "-o", qwen, "--context", "64", "--prefill", "0", "-q")
	if _, _, err := run(t, "", "accuracy", qwen); err == nil || !strings.Contains(err.Error(), "accuracy compares two programs of one model") {
		t.Errorf("accuracy of two models: %v", err)
	}
}
