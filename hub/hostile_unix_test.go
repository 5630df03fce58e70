//go:build linux || darwin || freebsd

package hub

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hfstatic/hfstatic/hub/hubtest"
)

// TestUntrustedCacheFiles plants links, FIFOs and hard links where a pull writes. Each
// pull fails at once with ErrUnsafeCache naming the path, and nothing outside the cache
// changes.
func TestUntrustedCacheFiles(t *testing.T) {
	weights := []byte("0123456789abcdef")
	blob := hubtest.SHA256(weights)
	const repo = "models--acme--tiny"
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, cache, outside string, commit string) // outside holds victim.txt
	}{
		{"partial is a symlink out of the cache", func(t *testing.T, cache, outside, _ string) {
			mkdir(t, cache, repo, "blobs")
			symlink(t, filepath.Join(outside, "victim.txt"), cache, repo, "blobs", blob+".incomplete")
		}},
		{"partial is a symlink inside the cache", func(t *testing.T, cache, _, _ string) {
			mkdir(t, cache, repo, "blobs")
			os.WriteFile(filepath.Join(cache, "other"), []byte("keep"), 0o644)
			symlink(t, "../../other", cache, repo, "blobs", blob+".incomplete")
		}},
		{"partial is a FIFO", func(t *testing.T, cache, _, _ string) {
			mkdir(t, cache, repo, "blobs")
			if err := syscall.Mkfifo(filepath.Join(cache, repo, "blobs", blob+".incomplete"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"partial is a hard link to a file outside", func(t *testing.T, cache, outside, _ string) {
			mkdir(t, cache, repo, "blobs")
			if err := os.Link(filepath.Join(outside, "victim.txt"), filepath.Join(cache, repo, "blobs", blob+".incomplete")); err != nil {
				t.Fatal(err)
			}
		}},
		{"partial is a folder", func(t *testing.T, cache, _, _ string) {
			mkdir(t, cache, repo, "blobs", blob+".incomplete")
		}},
		{"blobs is a symlink out of the cache", func(t *testing.T, cache, outside, _ string) {
			mkdir(t, cache, repo)
			symlink(t, outside, cache, repo, "blobs")
		}},
		{"the repository folder is a symlink out of the cache", func(t *testing.T, cache, outside, _ string) {
			symlink(t, outside, cache, repo)
		}},
		{"the snapshot folder is a symlink out of the cache", func(t *testing.T, cache, outside, commit string) {
			mkdir(t, cache, repo, "snapshots")
			symlink(t, outside, cache, repo, "snapshots", commit)
		}},
		{"refs is a symlink out of the cache", func(t *testing.T, cache, outside, _ string) {
			mkdir(t, cache, repo)
			symlink(t, outside, cache, repo, "refs")
		}},
		{"the lock folder is a symlink out of the cache", func(t *testing.T, cache, outside, _ string) {
			mkdir(t, cache, ".locks")
			symlink(t, outside, cache, ".locks", repo)
		}},
		{"the lock file is a FIFO", func(t *testing.T, cache, _, _ string) {
			mkdir(t, cache, ".locks", repo)
			if err := syscall.Mkfifo(filepath.Join(cache, ".locks", repo, blob+".lock"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := hubtest.New(t)
			r := tinyRepo(h)
			cache, outside := t.TempDir(), t.TempDir()
			victim := filepath.Join(outside, "victim.txt")
			os.WriteFile(victim, []byte("precious"), 0o644)
			c.plant(t, cache, outside, r.SHA)
			cl := newClient(h, cache)
			_, err := pullWithin(t, cl, tinyRef, 10*time.Second)
			var ue *UnsafeCacheError
			if !errors.Is(err, ErrUnsafeCache) || !errors.As(err, &ue) {
				t.Fatalf("error %v, want ErrUnsafeCache", err)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
				t.Errorf("the file outside the cache changed: %q, %v", b, err)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 1 {
				t.Errorf("%d entries written outside the cache", len(ents)-1)
			}
			if b, err := os.ReadFile(filepath.Join(cache, "other")); err == nil && string(b) != "keep" {
				t.Errorf("another file of the cache was written through a link: %q", b)
			}
		})
	}
}

// TestCacheReadsDoNotBlock: a FIFO planted as a ref or an index is refused when the cache
// is read, without blocking.
func TestCacheReadsDoNotBlock(t *testing.T) {
	dir := t.TempDir()
	commit := "0123456789012345678901234567890123456789"
	refs := filepath.Join(dir, "models--acme--tiny", "refs")
	snap := filepath.Join(dir, "models--acme--tiny", "snapshots", commit)
	os.MkdirAll(refs, 0o755)
	os.MkdirAll(snap, 0o755)
	if err := syscall.Mkfifo(filepath.Join(refs, "main"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(snap, "config.json"), []byte("{}"), 0o644)
	if err := syscall.Mkfifo(filepath.Join(snap, safetensorsIndex), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() {
		_, err := Cache{Dir: dir}.Snapshot(tinyRef)
		done <- err
	}()
	go func() {
		_, err := Cache{Dir: dir}.Snapshot(Ref{"acme/tiny", commit})
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if err == nil {
				t.Error("a FIFO in the cache was read as a snapshot")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("reading the cache blocked on a FIFO")
		}
	}
}

// TestLockHeldByAnotherProcess: while another process (here: another open file, which
// flock treats alike) holds a blob's lock, a pull waits; it then finds the blob and
// does not fetch it again.
func TestLockHeldByAnotherProcess(t *testing.T) {
	h := hubtest.New(t)
	r := tinyRepo(h)
	cache := t.TempDir()
	weights := r.Files["model.safetensors"]
	lockPath := filepath.Join(cache, ".locks", "models--acme--tiny", hubtest.SHA256(weights)+".lock")
	os.MkdirAll(filepath.Dir(lockPath), 0o755)
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := newClient(h, cache).Pull(context.Background(), tinyRef)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if h.Gets("model.safetensors") != 0 {
		t.Fatal("the pull fetched a blob whose lock another process holds")
	}
	select {
	case err := <-done:
		t.Fatalf("the pull ended while the lock was held: %v", err)
	default:
	}
	// The other process finishes the blob and lets go.
	blob := filepath.Join(cache, "models--acme--tiny", "blobs", hubtest.SHA256(weights))
	os.MkdirAll(filepath.Dir(blob), 0o755)
	os.WriteFile(blob, weights, 0o644)
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pull did not go on after the lock was released")
	}
	if n := h.Gets("model.safetensors"); n != 0 {
		t.Errorf("the blob was fetched %d times after another process brought it", n)
	}
	if got, _ := os.ReadFile(filepath.Join(cache, "models--acme--tiny", "snapshots", r.SHA, "model.safetensors")); !bytes.Equal(got, weights) {
		t.Error("the snapshot does not show the other process's blob")
	}
}

func mkdir(t *testing.T, parts ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(parts...), 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target string, parts ...string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(parts...)); err != nil {
		t.Fatal(err)
	}
}
