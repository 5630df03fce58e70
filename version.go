package hfstatic

import (
	"runtime/debug"
	"strings"
)

// ModulePath is this module's import path.
const ModulePath = "github.com/hfstatic/hfstatic"

// Version is the version of this module in the running binary: its module version
// ("v1.2.3", or "(devel)" when built from a source tree), followed by the commit when the Go
// toolchain recorded it ("(devel) 16e306e4c1d2", "+modified" for a changed tree). Programs
// record it as the version that wrote them.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	if bi.Main.Path != ModulePath {
		for _, d := range bi.Deps {
			if d.Path == ModulePath {
				if d.Replace != nil {
					return "(devel)" // replaced by a local copy
				}
				return d.Version
			}
		}
		return "(unknown)"
	}
	v := bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))]
		if modified == "true" {
			v += "+modified"
		}
	}
	return strings.TrimSpace(v)
}
