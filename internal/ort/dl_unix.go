//go:build ort && (linux || darwin)

package ort

import "github.com/ebitengine/purego"

// dlopen loads the shared library at path with the system's dynamic loader (purego's
// dlopen: the binary is then dynamically linked against libc).
func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// dlsym returns the address of the library's exported symbol name.
func dlsym(lib uintptr, name string) (uintptr, error) { return purego.Dlsym(lib, name) }
