//go:build ort

package ort

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

// dlopen loads the DLL at path (onnxruntime.dll). LOAD_WITH_ALTERED_SEARCH_PATH makes
// Windows look for the DLLs it depends on (onnxruntime_providers_shared.dll) in its own
// folder first, as a Unix rpath does; it wants an absolute path, so a path with a folder
// in it is made absolute (a bare name is searched for as Windows does).
func dlopen(path string) (uintptr, error) {
	flags := uintptr(0)
	if strings.ContainsAny(path, `/\:`) {
		if abs, err := filepath.Abs(path); err == nil {
			path, flags = abs, windows.LOAD_WITH_ALTERED_SEARCH_PATH
		}
	}
	h, err := windows.LoadLibraryEx(path, 0, flags)
	return uintptr(h), err
}

// dlsym returns the address of the DLL's exported function name.
func dlsym(lib uintptr, name string) (uintptr, error) {
	return windows.GetProcAddress(windows.Handle(lib), name)
}
