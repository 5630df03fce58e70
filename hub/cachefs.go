package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// cacheRoot writes into a Cache. Every write goes through an os.Root opened on the cache's
// top folder, which refuses any path (or symbolic link) that leads out of it; on top of
// that the folders written into must be real folders and the files written must be
// regular files with one link, so a link or FIFO planted in the cache is refused by name
// instead of being written through. The top folder itself may be a link (a cache moved to
// another disk).
type cacheRoot struct {
	root *os.Root
	dir  string // Cache.Dir, for messages and the process-wide lock keys
}

func openCacheRoot(dir string) (*cacheRoot, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the Hugging Face cache: %w", err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the Hugging Face cache: %w", err)
	}
	return &cacheRoot{root: r, dir: dir}, nil
}

func (c *cacheRoot) Close() error { return c.root.Close() }

// abs is the path of rel (relative to the cache) for messages and reads.
func (c *cacheRoot) abs(rel string) string { return filepath.Join(c.dir, rel) }

func (c *cacheRoot) unsafe(rel string, fi fs.FileInfo) error {
	return &UnsafeCacheError{Path: c.abs(rel), Reason: describeMode(fi.Mode())}
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "is a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "is a named pipe (FIFO), not a regular file"
	case m&fs.ModeSocket != 0:
		return "is a socket, not a regular file"
	case m&fs.ModeDevice != 0:
		return "is a device, not a regular file"
	case m.IsDir():
		return "is a folder, not a regular file"
	case m.IsRegular():
		return "is a regular file, not a folder"
	}
	return "is not a regular file (" + m.Type().String() + ")"
}

// mkdirs creates the folders of rel, each a real folder: a symbolic link (or a file)
// among them is refused.
func (c *cacheRoot) mkdirs(rel string) error {
	cur := ""
	for _, part := range strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/") {
		if part == "." {
			continue
		}
		cur = filepath.Join(cur, part)
		mkErr := c.root.Mkdir(cur, 0o755)
		fi, err := c.root.Lstat(cur)
		if err != nil {
			if mkErr != nil && !errors.Is(mkErr, fs.ErrExist) {
				err = mkErr
			}
			return fmt.Errorf("creating %s: %w", c.abs(cur), err)
		}
		if !fi.IsDir() {
			return c.unsafe(cur, fi)
		}
	}
	return nil
}

// openRegular opens rel (creating it with O_CREATE) only if it is a regular file, not
// through a symbolic link, and, with oneLink, not hard-linked elsewhere: a partial
// download is written into, so it must be this cache's own file. The open never blocks
// on a FIFO.
func (c *cacheRoot) openRegular(rel string, flag int, oneLink bool) (*os.File, error) {
	if fi, err := c.root.Lstat(rel); err == nil && !fi.Mode().IsRegular() {
		return nil, c.unsafe(rel, fi)
	}
	f, err := c.root.OpenFile(rel, flag|openNonblock, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = c.unsafe(rel, fi)
	}
	if err == nil {
		// The name must still be the file that was opened, itself and not a link to it.
		li, lerr := c.root.Lstat(rel)
		switch {
		case lerr != nil:
			err = lerr
		case !li.Mode().IsRegular():
			err = c.unsafe(rel, li)
		case !os.SameFile(fi, li):
			err = &UnsafeCacheError{Path: c.abs(rel), Reason: "was replaced while it was being opened"}
		}
	}
	if err == nil && oneLink {
		var n uint64
		if n, err = linkCount(f); err == nil && n > 1 {
			err = &UnsafeCacheError{Path: c.abs(rel), Reason: fmt.Sprintf("has %d hard links (a partial download must be the cache's own file)", n)}
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// tempName is a name beside rel that no other writer uses.
func tempName(rel string) string {
	var b [6]byte
	rand.Read(b[:])
	return rel + ".tmp-" + hex.EncodeToString(b[:])
}

// writeAtomic replaces rel with data through a fresh temporary file (O_EXCL: never an
// existing file or link) renamed over it.
func (c *cacheRoot) writeAtomic(rel string, data []byte) error {
	if err := c.mkdirs(filepath.Dir(rel)); err != nil {
		return err
	}
	tmp := tempName(rel)
	f, err := c.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = c.root.Rename(tmp, rel)
	}
	if err != nil {
		c.root.Remove(tmp)
		return fmt.Errorf("writing %s: %w", c.abs(rel), err)
	}
	return nil
}

// makeSymlink and makeHardlink are the ways link tries before copying (tests replace them
// to take the paths Windows takes without the symlink privilege).
var (
	makeSymlink  = func(r *os.Root, target, name string) error { return r.Symlink(target, name) }
	makeHardlink = func(r *os.Root, old, name string) error { return r.Link(old, name) }
)

// link makes linkRel (a snapshot's file) show blobRel: a relative symbolic link as
// huggingface_hub makes (../../blobs/ETAG); where symbolic links cannot be made (Windows
// without the privilege, some file systems) a hard link, else a copy, which is the
// layout huggingface_hub leaves on such systems. Whatever linkRel was is replaced.
func (c *cacheRoot) link(blobRel, linkRel string) error {
	if err := c.mkdirs(filepath.Dir(linkRel)); err != nil {
		return err
	}
	target, err := filepath.Rel(filepath.Dir(linkRel), blobRel)
	if err != nil {
		return err
	}
	tmp := tempName(linkRel)
	if err := makeSymlink(c.root, target, tmp); err != nil {
		if err := makeHardlink(c.root, blobRel, tmp); err != nil {
			if err := c.copy(blobRel, tmp); err != nil {
				return fmt.Errorf("linking %s: %w", c.abs(linkRel), err)
			}
		}
	}
	if err := c.root.Rename(tmp, linkRel); err != nil {
		c.root.Remove(tmp)
		return fmt.Errorf("linking %s: %w", c.abs(linkRel), err)
	}
	return nil
}

func (c *cacheRoot) copy(srcRel, dstRel string) error {
	src, err := c.openRegular(srcRel, os.O_RDONLY, false)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := c.root.OpenFile(dstRel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		c.root.Remove(dstRel)
	}
	return err
}

// heldLocks keeps goroutines of this process apart per lock file, on every platform; the
// file lock keeps processes apart (flock on Unix, LockFileEx on Windows).
var heldLocks sync.Map // absolute lock path → chan struct{} (capacity 1)

// lock takes the lock file rel (huggingface_hub's .locks/models--ORG--NAME/ETAG.lock, so
// a huggingface_hub download of the same blob waits too), waiting until ctx ends.
func (c *cacheRoot) lock(ctx context.Context, rel string) (unlockFn func(), err error) {
	v, _ := heldLocks.LoadOrStore(c.abs(rel), make(chan struct{}, 1))
	sem := v.(chan struct{})
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release := func() { <-sem }
	if err := c.mkdirs(filepath.Dir(rel)); err != nil {
		release()
		return nil, err
	}
	f, err := c.openRegular(rel, os.O_RDWR|os.O_CREATE, false)
	if err != nil {
		release()
		return nil, err
	}
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			release()
			return nil, fmt.Errorf("locking %s: %w", c.abs(rel), err)
		}
		if ok {
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			f.Close()
			release()
			return nil, ctx.Err()
		}
	}
	return func() {
		unlock(f)
		f.Close()
		release()
	}, nil
}

// readRegular reads a small file of the cache (a ref, an index) without following it
// into a FIFO or reading more than limit bytes.
func readRegular(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &UnsafeCacheError{Path: path, Reason: describeMode(fi.Mode())}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, err
}
