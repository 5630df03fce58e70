//go:build purego || !amd64

package kernels

// Route names the kernels this CPU runs, for version reports: here always "generic"
// (pure Go).
func Route() string { return "generic" }
