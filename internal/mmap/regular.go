package mmap

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
