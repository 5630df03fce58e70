//go:build ort && (linux || darwin || windows)

package ort

import "github.com/ebitengine/purego"

// Supported reports whether this build can load ONNX Runtime (the ort build tag, on Linux,
// macOS or Windows).
const Supported = true

// syscallN calls the C function at fn with args (integers and pointers) and returns its
// integer or pointer result. A Go pointer among args must be converted in the caller's
// argument list (see Lib.call).
func syscallN(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}
