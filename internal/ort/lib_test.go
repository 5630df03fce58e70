//go:build ort

package ort

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/internal/ort/orttest"
)

// testLib opens the library named by HFSTATIC_ORT_LIB (orttest.LibPath).
func testLib(t testing.TB) *Lib {
	t.Helper()
	path := orttest.LibPath(t)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestOpenRejectsMissingAndForeignLibraries(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	// a library that is not ONNX Runtime
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	switch runtime.GOOS {
	case "windows":
		libc = "kernel32.dll"
	case "darwin":
		libc = "/usr/lib/libSystem.B.dylib"
	}
	if _, err := os.Stat(libc); err != nil && runtime.GOOS != "windows" {
		libc = ""
	}
	for _, c := range []struct{ name, path, want string }{
		{"missing", missing, "cannot be loaded"},
		{"empty", "", "no path given"},
		{"not onnxruntime", libc, "no OrtGetApiBase"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "not onnxruntime" && c.path == "" {
				t.Skip("no libc at the usual path")
			}
			_, err := Open(c.path)
			if !errors.Is(err, ErrLibrary) {
				t.Fatalf("Open(%q) = %v, want ErrLibrary", c.path, err)
			}
			var le *LibraryError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--ort-lib") {
				t.Fatalf("Open(%q) = %q, want a *LibraryError saying %q and how to give the library", c.path, err, c.want)
			}
			if c.path != "" && !strings.Contains(err.Error(), c.path) {
				t.Fatalf("error %q does not name the path", err)
			}
		})
	}
}

func TestOpenReportsTheVersion(t *testing.T) {
	l := testLib(t)
	if !strings.HasPrefix(l.Version, Version+".") {
		t.Fatalf("Version = %q, want %s.x", l.Version, Version)
	}
	le := &LibraryError{Path: "/x/libonnxruntime.so", Found: "1.17.0", Problem: "wrong version"}
	if msg := le.Error(); !strings.Contains(msg, "1.17.0") || !strings.Contains(msg, "/x/libonnxruntime.so") || !strings.Contains(msg, Version) {
		t.Fatalf("LibraryError = %q, want the path, the version found and the one needed", msg)
	}
}

// readOnly maps data read-only (as a program file is mapped).
func readOnly(t testing.TB, data []byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := mmap.OpenWith(path, mmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f.Bytes()
}

func f32le(vals ...float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// TestSessionReadsMappedWeightsAndWritesBoundBuffers runs y = x·W + b with W supplied from
// read-only mapped memory (AddInitializer, not copied) and x, y bound to Go buffers.
func TestSessionReadsMappedWeightsAndWritesBoundBuffers(t *testing.T) {
	l := testLib(t)
	g := graphSpec{
		nodes:   [][]byte{node("MatMul", []string{"x", "w"}, []string{"xw"}), node("Add", []string{"xw", "b"}, []string{"y"})},
		inits:   [][]byte{externalTensor("w", elemFloat, 2, 3), f32Tensor("b", []float32{0.5, 0.25, -1}, 3)},
		inputs:  [][]byte{valueInfo("x", elemFloat, 1, 2)},
		outputs: [][]byte{valueInfo("y", elemFloat, 1, 3)},
	}
	w := readOnly(t, f32le(1, 2, 3, 4, 5, 6))
	wv, err := l.tensor("w", w, elemFloat, []int64{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.release(fnReleaseValue, wv)
	sess, err := l.newSession("test", g.model(), sessionOptions{threads: 1, weights: map[string]uintptr{"w": wv}, optLevel: ortEnableAll})
	if err != nil {
		t.Fatal(err)
	}
	defer l.release(fnReleaseSession, sess)

	x, y := f32le(1, 10), make([]byte, 12)
	xv, err := l.tensor("x", x, elemFloat, []int64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.release(fnReleaseValue, xv)
	yv, err := l.tensor("y", y, elemFloat, []int64{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.release(fnReleaseValue, yv)
	var binding uintptr
	if err := l.call("create binding", fnCreateIoBinding, sess, uintptr(unsafe.Pointer(&binding))); err != nil {
		t.Fatal(err)
	}
	defer l.release(fnReleaseIoBinding, binding)
	var strs cstrings
	if err := l.call("bind x", fnBindInput, binding, strs.add("x"), xv); err != nil {
		t.Fatal(err)
	}
	if err := l.call("bind y", fnBindOutput, binding, strs.add("y"), yv); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(strs)
	args := []uintptr{sess, 0, binding}
	run := func() {
		st := syscallN(l.fn[fnRunWithBinding], args...)
		if err := l.status("run", st); err != nil {
			t.Fatal(err)
		}
	}
	run()
	want := []float32{1 + 40 + 0.5, 2 + 50 + 0.25, 3 + 60 - 1}
	got := unsafe.Slice((*float32)(unsafe.Pointer(&y[0])), 3)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("y = %v, want %v (written into the bound buffer)", got, want)
		}
	}
	copy(x, f32le(2, 0)) // the bound input is read again, in place
	run()
	if got[0] != 2.5 || got[2] != 5 {
		t.Fatalf("after changing x in place: y = %v, want [2.5 4.25 5]", got)
	}
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Errorf("RunWithBinding allocates %v times per run on the Go side, want 0", n)
	}
}

func TestRunErrorCarriesORTMessage(t *testing.T) {
	l := testLib(t)
	g := graphSpec{
		nodes:   [][]byte{node("NoSuchOp", []string{"x"}, []string{"y"})},
		inputs:  [][]byte{valueInfo("x", elemFloat, 1, 2)},
		outputs: [][]byte{valueInfo("y", elemFloat, 1, 2)},
	}
	_, err := l.newSession("method \"decode\"", g.model(), sessionOptions{threads: 1, optLevel: ortEnableAll})
	var oe *Error
	if !errors.As(err, &oe) || oe.Message == "" || !strings.Contains(err.Error(), `method "decode"`) {
		t.Fatalf("newSession(garbage) = %v, want an *Error with ORT's message naming the method", err)
	}
}
