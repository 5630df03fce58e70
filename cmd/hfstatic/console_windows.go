package main

import (
	"io"
	"os"

	"golang.org/x/sys/windows"
)

// windowsConsole reports whether in is a Windows console, where a Ctrl-C ends a pending
// read as if the input had ended: ReadConsole returns no characters for it, which
// Go's reader turns into io.EOF.
func windowsConsole(in io.Reader) bool {
	f, ok := in.(*os.File)
	if !ok {
		return false
	}
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(f.Fd()), &mode) == nil
}
