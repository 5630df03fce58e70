package main

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/models"
)

// readmeBlock is a fenced code block of the README and the heading it sits under.
type readmeBlock struct {
	lang, heading, text string
}

func readmeBlocks(t *testing.T, readme string) []readmeBlock {
	t.Helper()
	var out []readmeBlock
	var cur *readmeBlock
	heading := ""
	sc := bufio.NewScanner(strings.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(line, "```"), heading: heading}
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case strings.HasPrefix(line, "#"):
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	if cur != nil {
		t.Fatal("README.md: a code block is not closed")
	}
	return out
}

// shellWords splits a command line as sh would for these simple lines: words, '…' and "…"
// quoting, and a comment from an unquoted # that starts a word.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				j = len(line) - i - 1
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// The README's commands run: the first of its two commands at the top (the second is this
// suite), every hfstatic command of its quick tour, and its Go program, built in a module of
// its own with the go.mod lines it gives. The Hub models the tour names are stood in for by
// the embedded stories260K folder in a fake Hugging Face cache, offline: what is checked is
// that each command and flag works as written.
func TestREADMECommandsRun(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 150 {
		t.Errorf("README.md has %d lines; it is kept to 150 (details go to docs/)", n)
	}
	blocks := readmeBlocks(t, readme)
	const top = `go run ./cmd/hfstatic generate --prompt "Once upon a time"   # run the embedded default model (stories260K)
go test ./...                                                 # run the tests (.ci/run adds every kernel route, ONNX Runtime, a browser, the platforms, fuzzing)
`
	if len(blocks) == 0 || blocks[0].text != top {
		t.Fatalf("README.md does not start with the two commands:\n%s", top)
	}
	if out := mustRun(t, "generate", "--prompt", "Once upon a time"); strings.TrimSpace(out) == "" {
		t.Error("the README's first command printed nothing")
	}

	// The tour's commands, in order, in a folder of their own.
	var tour []string
	names := map[string]fs.FS{}
	ref := regexp.MustCompile(`^[A-Za-z0-9][\w.-]*/[\w.-]+$`)
	for _, bl := range blocks {
		if bl.lang != "sh" || bl.heading != "A quick tour" {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(bl.text), "\n") {
			tour = append(tour, line)
			for _, w := range shellWords(line) {
				if ref.MatchString(w) && !strings.Contains(w, "localhost") {
					names[w] = templatedStories(t)
				}
			}
		}
	}
	if len(tour) < 8 {
		t.Fatalf("the quick tour has %d commands: %q", len(tour), tour)
	}
	fakeHFCache(t, names)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	base := ""
	for _, line := range tour {
		words := shellWords(line)
		stdin := "Hello\n/bye\n" // for a chat
		if len(words) > 2 && words[0] == "echo" && words[2] == "|" {
			stdin, words = words[1]+"\n", words[3:]
		}
		switch words[0] {
		case "hfstatic":
			if words[1] == "serve" {
				base, _ = startServe(t, words[1:]...)
				continue
			}
			if _, stderr, err := run(t, stdin, words[1:]...); err != nil {
				t.Errorf("README: %s: %v\n%s", line, err, stderr)
			}
		case "curl":
			var url, data string
			for i, w := range words {
				if strings.Contains(w, "localhost:8080") {
					url = strings.Replace(w, "localhost:8080", strings.TrimPrefix(base, "http://"), 1)
				}
				if w == "-d" && i+1 < len(words) {
					data = words[i+1]
				}
			}
			if base == "" || url == "" {
				t.Errorf("README: %s: no server to ask", line)
				continue
			}
			if code, body := httpPost(t, "http://"+url, data); code != 200 {
				t.Errorf("README: %s: %d %s", line, code, body)
			}
		default:
			t.Errorf("README: %s: the tour runs hfstatic (and curl against serve) only", line)
		}
	}
	if base == "" {
		t.Error("the README's tour starts no server")
	}

	// The Go program, in a module beside a copy of this one, as the README says.
	var gomod, program string
	for _, bl := range blocks {
		switch {
		case bl.lang == "" && strings.Contains(bl.text, "require github.com/hfstatic/hfstatic"):
			gomod = bl.text
		case bl.lang == "go":
			program = bl.text
		}
	}
	if gomod != "require github.com/hfstatic/hfstatic v0.0.0\nreplace github.com/hfstatic/hfstatic => ../hfstatic\n" || program == "" {
		t.Fatalf("README.md's go.mod lines are %q; its Go program %d bytes", gomod, len(program))
	}
	buildREADMEProgram(t, repo, gomod, program)
}

// templatedStories is the stories260K folder with a small chat template written for these
// tests (server/testdata's) in its tokenizer_config.json, standing in for an instruct model.
func templatedStories(t *testing.T) fs.FS {
	t.Helper()
	folder := fstest.MapFS{}
	src := models.Stories260K()
	err := fs.WalkDir(src, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(src, path)
		folder[path] = &fstest.MapFile{Data: data, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile("../../server/testdata/chat_template.jinja")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(folder["tokenizer_config.json"].Data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["chat_template"] = string(tmpl)
	folder["tokenizer_config.json"].Data, _ = json.Marshal(cfg)
	return folder
}

// buildREADMEProgram writes a module with the README's go.mod lines and program next to this
// repository (linked as ../hfstatic), tidies it offline and runs it.
func buildREADMEProgram(t *testing.T, repo, gomod, program string) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	dir := t.TempDir()
	if err := os.Symlink(repo, filepath.Join(dir, "hfstatic")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app")
	os.Mkdir(app, 0o755)
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum")) // the hashes go mod tidy would fetch
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"go.mod":  "module example.com/app\n\ngo 1.26\n\n" + gomod,
		"main.go": program,
		"go.sum":  string(sum),
	} {
		if err := os.WriteFile(filepath.Join(app, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"mod", "tidy"}, {"run", "."}} {
		cmd := exec.CommandContext(t.Context(), goTool, args...)
		cmd.Dir = app
		// -trimpath: the build cache then serves this module's packages on later runs, although
		// they are read through the link.
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false -trimpath")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("README's Go program: go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] == "run" && len(strings.TrimSpace(string(out))) < 20 {
			t.Errorf("README's Go program printed %q", out)
		}
	}
}
