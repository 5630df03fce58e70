//go:build !ort || !(linux || darwin || windows)

package ort

// Supported reports whether this build can load ONNX Runtime: it cannot, it was built
// without the ort tag (or for a system the loader does not support), so that it links
// statically. Open returns a *LibraryError with NotBuilt set.
const Supported = false

// syscallN is never reached: no Lib can be opened in this build.
func syscallN(fn uintptr, args ...uintptr) uintptr {
	panic("ort: ONNX Runtime called in a build without the ort tag")
}

func dlopen(string) (uintptr, error)         { panic("ort: dlopen in a build without the ort tag") }
func dlsym(uintptr, string) (uintptr, error) { panic("ort: dlsym in a build without the ort tag") }
