package mmap

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// DirFS returns a file system rooted at dir. Opened regular files are mapped:
// they implement io.ReaderAt and Bytes() []byte (valid until the file is
// closed). Directories are served by os.DirFS. FIFOs, devices and sockets
// are refused with ErrNotRegular, without blocking.
//
// Symbolic links are followed wherever they lead, also out of dir: a
// huggingface_hub cache folder is made of links into ../../blobs. What a
// link names is parsed and validated like any other file.
func DirFS(dir string) fs.FS { return dirFS{dir: dir, os: os.DirFS(dir)} }

type dirFS struct {
	dir string
	os  fs.FS
}

func (d dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	st, err := fs.Stat(d.os, name)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return d.os.Open(name)
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("a %s: %w", modeName(st.Mode()), ErrNotRegular)}
	}
	m, err := Open(d.path(name))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &mappedFile{File: m, info: st}, nil
}

// ReadFile implements fs.ReadFileFS without mapping small files. Like Open,
// it reads regular files only.
func (d dirFS) ReadFile(name string) ([]byte, error) {
	if _, err := filepath.Localize(name); err != nil || !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	b, err := ReadRegular(d.path(name))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = name // errors name the path inside the folder, as os.DirFS's do
			return nil, pe
		}
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return b, nil
}

// path is the file name of a valid name, which Localize accepts: on Windows a name with a
// backslash or a colon in it, or a reserved one (NUL, COM1), is not a name in the folder
// (as in os.DirFS).
func (d dirFS) path(name string) string {
	local, _ := filepath.Localize(name)
	return filepath.Join(d.dir, local)
}

// Stat implements fs.StatFS.
func (d dirFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(d.os, name) }

// mappedFile is an fs.File over a mapped file with a sequential read cursor.
type mappedFile struct {
	*File
	info fs.FileInfo
	off  int64
}

func (m *mappedFile) Stat() (fs.FileInfo, error) { return m.info, nil }

func (m *mappedFile) Read(p []byte) (int, error) {
	if m.closed {
		return 0, ErrClosed
	}
	n, err := m.ReadAt(p, m.off)
	m.off += int64(n)
	if errors.Is(err, io.EOF) && n > 0 {
		err = nil
	}
	return n, err
}

// Seek implements io.Seeker.
func (m *mappedFile) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = m.off + offset
	case io.SeekEnd:
		abs = m.Size() + offset
	default:
		return 0, errors.New("mmap: invalid whence")
	}
	if abs < 0 {
		return 0, errors.New("mmap: negative position")
	}
	m.off = abs
	return abs, nil
}
