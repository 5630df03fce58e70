// Package ort runs a program's methods on ONNX Runtime: a binding to ONNX Runtime's C API,
// loaded at run time (no cgo, so a binary built without the library keeps working with the
// Go executor), and an Executor (runner.Executor) that runs each method's ONNX graph, stored
// in the program file by `hfstatic export --delegate onnx`, over the runner's own buffers.
//
// The loader needs the platform's dynamic loader, which makes a binary dynamically linked,
// so it is built only with the build tag ort (go build -tags ort ./cmd/hfstatic): dl_*.go
// load the library (purego's Dlopen on Unix, LoadLibrary on Windows) and call its functions
// (call_ort.go). Without the tag Open returns a *LibraryError saying how to get a build with
// it (noort.go), the binary stays static, and the rest of the package compiles unchanged:
// it calls ONNX Runtime only through Lib's helpers.
//
// The graph attends over the incoming caches and the current rows and returns the logits
// and the current rows' keys and values; it mutates nothing. The executor then writes the
// real rows into the caches in place (ring caches included) and advances the counters,
// as the contract's cache_write and advance ops say (docs/contract.md §4-5).
//
// It does not build graphs (internal/onnx does) and it reads no environment: the library's
// path comes from the caller.
package ort

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// Version is the ONNX Runtime release this binding is written for; a library whose
// version string does not start with it is rejected.
const Version = "1.30"

// apiVersion is ORT_API_VERSION of ONNX Runtime 1.30, passed to OrtApiBase.GetApi.
const apiVersion = 30

// Indices into the OrtApi function table (struct OrtApi in onnxruntime_c_api.h). The table
// only grows at its end, so these are the same in every release that has them; they were
// counted from the header of API version 29 (ORT 1.29) and checked at load by calling
// GetBuildInfoString, the last index used, which must return ORT's build-info string.
const (
	fnGetErrorCode                   = 1
	fnGetErrorMessage                = 2
	fnCreateEnv                      = 3
	fnCreateSessionFromArray         = 8
	fnCreateSessionOptions           = 10
	fnSetSessionExecutionMode        = 13
	fnEnableProfiling                = 14
	fnSetSessionGraphOptimizationLvl = 23
	fnSetIntraOpNumThreads           = 24
	fnSetInterOpNumThreads           = 25
	fnCreateTensorWithDataAsOrtValue = 49
	fnCreateCpuMemoryInfo            = 69
	fnAllocatorFree                  = 76
	fnGetAllocatorWithDefaultOptions = 78
	fnReleaseEnv                     = 92
	fnReleaseStatus                  = 93
	fnReleaseMemoryInfo              = 94
	fnReleaseSession                 = 95
	fnReleaseValue                   = 96
	fnReleaseSessionOptions          = 100
	fnSessionEndProfiling            = 110
	fnAddSessionConfigEntry          = 130
	fnRunWithBinding                 = 133
	fnCreateIoBinding                = 134
	fnReleaseIoBinding               = 135
	fnBindInput                      = 136
	fnBindOutput                     = 137
	fnAddInitializer                 = 150
	fnAddExternalInitializers        = 210
	fnGetBuildInfoString             = 254
	fnCount                          = 255
)

// ErrLibrary reports an ONNX Runtime library that cannot be used (missing, not ONNX
// Runtime, or the wrong version); the *LibraryError that wraps it names the path.
var ErrLibrary = errors.New("onnxruntime library unusable")

// LibraryError says why the library at Path cannot be used.
type LibraryError struct {
	Path    string
	Found   string // the version the library reports; "" when it could not be asked
	Problem string
	// NotBuilt: this binary was built without the ort tag and loads no library at all.
	NotBuilt bool
}

// HowToBuild says how to get a binary that runs ONNX Runtime.
const HowToBuild = "build hfstatic with the ort tag (`go build -tags ort ./cmd/hfstatic`), or take the hfstatic-ort release archive"

func (e *LibraryError) Error() string {
	if e.NotBuilt {
		switch runtime.GOOS {
		case "linux", "darwin", "windows":
			return "this hfstatic was built without ONNX Runtime support (the default build is a static binary, which cannot load shared libraries): " + HowToBuild
		}
		return "hfstatic has no ONNX Runtime support on " + runtime.GOOS + ": its loader is built for Linux, macOS and Windows only"
	}
	msg := fmt.Sprintf("onnxruntime library %s: %s", e.Path, e.Problem)
	if e.Found != "" {
		msg += fmt.Sprintf(" (it reports version %s, hfstatic needs %s.x)", e.Found, Version)
	}
	return msg + "; " + LibraryHint()
}

// LibraryHint says how to give the library and where to get it for this platform.
func LibraryHint() string {
	name, dir := "libonnxruntime.so.1", "linux/"
	switch runtime.GOOS {
	case "darwin":
		name, dir = "libonnxruntime.1.dylib", "darwin/"
	case "windows":
		name, dir = "onnxruntime.dll", "win32/"
	}
	if runtime.GOARCH == "amd64" {
		dir += "x64"
	} else {
		dir += runtime.GOARCH
	}
	return "give the path of " + name + " from ONNX Runtime " + Version + " with --ort-lib or HFSTATIC_ORT_LIB (npm install --ignore-scripts onnxruntime-node@" + Version + ".0 ships it as node_modules/onnxruntime-node/bin/napi-v6/" + dir + "/" + name + ")"
}

func (e *LibraryError) Unwrap() error { return ErrLibrary }

// Error is a failed ONNX Runtime call: what hfstatic was doing, ORT's error code and message.
type Error struct {
	Op      string // e.g. `create session for method "decode"`
	Code    int    // OrtErrorCode
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("onnxruntime: %s: %s (code %d)", e.Op, e.Message, e.Code)
}

// Lib is a loaded ONNX Runtime library with its environment. It is safe for concurrent
// use; the library stays loaded for the life of the process.
type Lib struct {
	Path    string
	Version string
	fn      [fnCount]uintptr
	env     uintptr // OrtEnv*
	cpu     uintptr // OrtMemoryInfo* for CPU memory
}

var (
	libsMu sync.Mutex
	libs   = map[string]*Lib{}
)

// Open loads the ONNX Runtime library at path (once per process; later calls return the
// same Lib) and checks its version. In a build without the ort tag it returns a
// *LibraryError with NotBuilt set.
func Open(path string) (*Lib, error) {
	if !Supported {
		return nil, &LibraryError{Path: path, NotBuilt: true}
	}
	if path == "" {
		return nil, &LibraryError{Path: `""`, Problem: "no path given"}
	}
	libsMu.Lock()
	defer libsMu.Unlock()
	if l, ok := libs[path]; ok {
		return l, nil
	}
	l, err := open(path)
	if err != nil {
		return nil, err
	}
	libs[path] = l
	return l, nil
}

func open(path string) (*Lib, error) {
	h, err := dlopen(path)
	if err != nil {
		return nil, &LibraryError{Path: path, Problem: "cannot be loaded: " + err.Error()}
	}
	base, err := dlsym(h, "OrtGetApiBase")
	if err != nil {
		return nil, &LibraryError{Path: path, Problem: "has no OrtGetApiBase symbol: not ONNX Runtime"}
	}
	// OrtApiBase { const OrtApi* (*GetApi)(uint32_t); const char* (*GetVersionString)(void); }
	apiBase := syscallN(base)
	if apiBase == 0 {
		return nil, &LibraryError{Path: path, Problem: "OrtGetApiBase returned NULL"}
	}
	getAPI := *(*uintptr)(cptr(apiBase))
	getVersion := *(*uintptr)(unsafe.Add(cptr(apiBase), unsafe.Sizeof(uintptr(0))))
	l := &Lib{Path: path, Version: goString(syscallN(getVersion))}
	if l.Version != Version && !strings.HasPrefix(l.Version, Version+".") {
		return nil, &LibraryError{Path: path, Found: l.Version, Problem: "wrong version"}
	}
	api := syscallN(getAPI, apiVersion)
	if api == 0 {
		return nil, &LibraryError{Path: path, Found: l.Version, Problem: fmt.Sprintf("does not provide C API version %d", apiVersion)}
	}
	table := unsafe.Slice((*uintptr)(cptr(api)), fnCount)
	copy(l.fn[:], table)
	for i, f := range l.fn {
		if f == 0 && isUsed(i) {
			return nil, &LibraryError{Path: path, Found: l.Version, Problem: fmt.Sprintf("C API function %d is NULL", i)}
		}
	}
	if info := l.callString(fnGetBuildInfoString); !strings.Contains(info, "ORT Build Info") {
		return nil, &LibraryError{Path: path, Found: l.Version, Problem: fmt.Sprintf("the C API table does not have the expected layout (GetBuildInfoString returned %q)", info)}
	}
	var strs cstrings
	err = l.call("create environment", fnCreateEnv, ortLoggingWarning, strs.add("hfstatic"), uintptr(unsafe.Pointer(&l.env)))
	runtime.KeepAlive(strs)
	if err != nil {
		return nil, err
	}
	if err := l.call("create CPU memory info", fnCreateCpuMemoryInfo, ortDeviceAllocator, ortMemTypeDefault, uintptr(unsafe.Pointer(&l.cpu))); err != nil {
		return nil, err
	}
	return l, nil
}

func isUsed(i int) bool {
	switch i {
	case fnGetErrorCode, fnGetErrorMessage, fnCreateEnv, fnCreateSessionFromArray, fnCreateSessionOptions,
		fnSetSessionExecutionMode, fnEnableProfiling, fnSetSessionGraphOptimizationLvl, fnSetIntraOpNumThreads,
		fnSetInterOpNumThreads, fnCreateTensorWithDataAsOrtValue, fnCreateCpuMemoryInfo, fnAllocatorFree,
		fnGetAllocatorWithDefaultOptions, fnReleaseEnv, fnReleaseStatus, fnReleaseMemoryInfo, fnReleaseSession,
		fnReleaseValue, fnReleaseSessionOptions, fnSessionEndProfiling, fnAddSessionConfigEntry, fnRunWithBinding,
		fnCreateIoBinding, fnReleaseIoBinding, fnBindInput, fnBindOutput, fnAddInitializer, fnAddExternalInitializers, fnGetBuildInfoString:
		return true
	}
	return false
}

// C enum values used.
const (
	ortLoggingWarning  = 2 // OrtLoggingLevel ORT_LOGGING_LEVEL_WARNING
	ortDeviceAllocator = 0 // OrtAllocatorType OrtDeviceAllocator
	ortMemTypeDefault  = 0 // OrtMemType OrtMemTypeDefault
	ortSequential      = 0 // ExecutionMode ORT_SEQUENTIAL
	ortEnableAll       = 99
)

// call calls the OrtApi function i, which returns an OrtStatus*, and turns a non-NULL
// status into an *Error (releasing the status). A Go pointer passed as an argument must be
// converted in the argument list itself (uintptr(unsafe.Pointer(&x))): go:uintptrescapes then
// moves x to the heap, so that the address stays valid while C writes through it (a stack
// may move during the call chain).
//
//go:uintptrescapes
func (l *Lib) call(what string, i int, args ...uintptr) error {
	st := syscallN(l.fn[i], args...)
	runtime.KeepAlive(args)
	return l.status(what, st)
}

// status turns an OrtStatus* into an error and releases it.
func (l *Lib) status(what string, st uintptr) error {
	if st == 0 {
		return nil
	}
	code := syscallN(l.fn[fnGetErrorCode], st)
	msg := syscallN(l.fn[fnGetErrorMessage], st)
	e := &Error{Op: what, Code: int(int32(code)), Message: goString(msg)}
	syscallN(l.fn[fnReleaseStatus], st)
	return e
}

// callString calls an OrtApi function that returns a const char*.
func (l *Lib) callString(i int) string {
	return goString(syscallN(l.fn[i]))
}

// release calls a Release* function on p (a no-op for 0).
func (l *Lib) release(i int, p uintptr) {
	if p != 0 {
		syscallN(l.fn[i], p)
	}
}

// cptr turns an address returned by C (memory Go does not manage) into a pointer.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// goString copies a NUL-terminated C string.
func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	var n int
	for *(*byte)(unsafe.Add(cptr(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(cptr(p)), n))
}

// cstrings holds NUL-terminated copies of Go strings on the Go heap (which does not move)
// for C calls; the caller keeps the holder alive (runtime.KeepAlive) until the calls return.
type cstrings [][]byte

// add returns a pointer to a NUL-terminated copy of s.
func (c *cstrings) add(s string) uintptr {
	b := make([]byte, len(s)+1)
	copy(b, s)
	*c = append(*c, b)
	return uintptr(unsafe.Pointer(&b[0]))
}
