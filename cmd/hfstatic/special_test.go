//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/internal/safetensors"
)

// runWithin runs the command and fails the test if it has not returned
// within limit (a FIFO used to block export until SIGKILL).
func runWithin(t *testing.T, limit time.Duration, args ...string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, _, err := run(t, "", args...)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("hfstatic %s still running after %v", strings.Join(args, " "), limit)
		return nil
	}
}

// copyStories copies the stories260K folder's files except skip into a new
// directory.
func copyStories(t *testing.T, skip ...string) string {
	t.Helper()
	d := t.TempDir()
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		if slices.Contains(skip, f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(storiesDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSpecialFilesAreRefusedPromptly: a FIFO where a shard, a config or a
// program should be is refused with ErrNotRegular's message within seconds.
func TestSpecialFilesAreRefusedPromptly(t *testing.T) {
	const want = "not a regular file"
	t.Run("shard named by the index", func(t *testing.T) {
		d := copyStories(t, "model.safetensors")
		b, err := os.ReadFile(filepath.Join(storiesDir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := safetensors.FromBytes(b)
		if err != nil {
			t.Fatal(err)
		}
		weightMap := map[string]string{}
		for _, tt := range f.Tensors() {
			weightMap[tt.Name] = "model-00001-of-00001.safetensors"
		}
		idx, _ := json.Marshal(map[string]any{"weight_map": weightMap})
		os.WriteFile(filepath.Join(d, "model.safetensors.index.json"), idx, 0o644)
		mkfifo(t, filepath.Join(d, "model-00001-of-00001.safetensors"))
		err = runWithin(t, 10*time.Second, "export", d, "-o", filepath.Join(t.TempDir(), "x.hfs"), "-q")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("export = %v, want an error saying %q", err, want)
		}
	})
	for _, name := range []string{"config.json", "tokenizer_config.json"} {
		t.Run(name, func(t *testing.T) {
			d := copyStories(t, name)
			mkfifo(t, filepath.Join(d, name))
			err := runWithin(t, 10*time.Second, "export", d, "-o", filepath.Join(t.TempDir(), "x.hfs"), "-q")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("export = %v, want an error saying %q", err, want)
			}
		})
	}
	t.Run("program", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "fifo.hfs")
		mkfifo(t, p)
		for _, load := range []string{"mmap", "mmap-plain", "copy"} {
			err := runWithin(t, 10*time.Second, "generate", p, "--load", load, "--tokens", "1", "-n", "2")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("generate --load %s = %v, want an error saying %q", load, err, want)
			}
		}
	})
}

// TestHubCacheSymlinksAreFollowed: a huggingface_hub snapshot folder is made
// of symbolic links into ../../blobs; it exports as the plain folder does.
func TestHubCacheSymlinksAreFollowed(t *testing.T) {
	root := t.TempDir()
	blobs := filepath.Join(root, "blobs")
	snap := filepath.Join(root, "snapshots", "abc123")
	for _, d := range []string{blobs, snap} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(storiesDir, f))
		if err != nil {
			t.Fatal(err)
		}
		blob := filepath.Join(blobs, strings.Repeat("ab", 4)+string(rune('0'+i)))
		if err := os.WriteFile(blob, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", "..", "blobs", filepath.Base(blob)), filepath.Join(snap, f)); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, "export", snap, "-o", filepath.Join(t.TempDir(), "x.hfs"), "--context", "32", "-q")
}

// TestSecondSignalKills: a command that does not watch its context
// (tokenize blocked reading stdin) still ends on SIGTERM: the first signal
// cancels, a second one kills at once (and a watchdog exits after
// stopBudget).
func TestSecondSignalKills(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgsEnv+"=tokenize")
	stdin, err := cmd.StdinPipe() // held open: tokenize blocks reading it
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	time.Sleep(300 * time.Millisecond) // let it start reading stdin
	go func() { done <- cmd.Wait() }()
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Success() {
			t.Errorf("tokenize ended with %v, want a failure or death by signal", err)
		}
	case <-time.After(3 * time.Second):
		cmd.Process.Kill()
		t.Fatal("tokenize still running 3 s after two SIGTERMs")
	}
}
