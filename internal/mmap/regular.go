package mmap

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

// ErrNotRegular means a path names a FIFO, device, socket or directory where
// a checkpoint or program file was expected. Such a file is refused before
// anything reads it: a FIFO would block the reader forever.
var ErrNotRegular = errors.New("not a regular file (checkpoints and programs must be regular files)")

// OpenRegular opens the file at path for reading, following symbolic links
// wherever they lead, and refuses anything but a regular file without
// waiting on it (the open does not block on a FIFO with no writer).
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	fd, err := os.OpenFile(path, os.O_RDONLY|noBlock, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := fd.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("mmap: %s is a %s: %w", path, modeName(st.Mode()), ErrNotRegular)
	}
	if err != nil {
		fd.Close()
		return nil, nil, err
	}
	return fd, st, nil
}

// ReadRegular reads the whole regular file at path (see OpenRegular).
func ReadRegular(path string) ([]byte, error) {
	fd, st, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	b := make([]byte, 0, st.Size())
	b, err = readAll(fd, b)
	return b, err
}

func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func modeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

// openRegular opens the regular file at path and returns its size, which fits
// in an int. An empty file is returned closed, with size 0.
func openRegular(path string) (*os.File, int64, error) {
	fd, st, err := OpenRegular(path)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case int64(int(st.Size())) != st.Size():
		err = &TooLargeError{Path: path, Size: st.Size()}
	case st.Size() > 0:
		return fd, st.Size(), nil
	}
	fd.Close()
	return nil, 0, err
}

// ErrTooLarge reports a file larger than this platform's address space (a 32-bit one)
// can hold; the *TooLargeError that wraps it names the file.
var ErrTooLarge = errors.New("file too large for this platform's address space")

// TooLargeError is a file of Size bytes, more than an int (and a slice) can hold here.
type TooLargeError struct {
	Path string
	Size int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("mmap: %s is %d bytes, more than a %d-bit platform can map (at most %d): use a 64-bit build of hfstatic", e.Path, e.Size, strconv.IntSize, math.MaxInt)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// readParallel fills data from f with positioned reads of 32 MiB chunks on two goroutines
// (faulting in fresh huge pages is a good part of the cost, and it parallelizes).
func readParallel(f *os.File, data []byte) error {
	const chunk = 32 << 20
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs [2]error
	)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				off := next.Add(chunk) - chunk
				if off >= int64(len(data)) {
					return
				}
				end := min(off+chunk, int64(len(data)))
				if _, err := f.ReadAt(data[off:end], off); err != nil && !(err == io.EOF && end == int64(len(data))) {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs[:]...)
}
