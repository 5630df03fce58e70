package main

import "time"

// ctrlCSince reports whether a Ctrl-C has reached the command since ctrlCs was seen, waiting a
// moment for one: on a Windows console the Ctrl-C ends a pending read (as an end of input)
// while its signal is delivered on another thread, in either order.
func ctrlCSince(seen uint64) bool {
	for deadline := time.Now().Add(250 * time.Millisecond); ; time.Sleep(10 * time.Millisecond) {
		if ctrlCs.Load() != seen {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// ctrlCEndsRead reports whether a Ctrl-C ends a pending read of in as if the input had ended
// (a variable for tests).
var ctrlCEndsRead = windowsConsole
