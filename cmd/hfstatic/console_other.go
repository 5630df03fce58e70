//go:build !windows

package main

import "io"

// windowsConsole: outside Windows a Ctrl-C at a terminal ends no read (the signal arrives
// on its own; an interrupted read is retried).
func windowsConsole(io.Reader) bool { return false }
