//go:build tools

// Package tools pins the modules that the project's generators and optional
// components use, so that `go mod tidy` keeps them in go.mod.
package tools

import (
	_ "github.com/ardanlabs/jinja"
	_ "github.com/dlclark/regexp2"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/mmcloughlin/avo/build"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "github.com/x448/float16"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/text/unicode/norm"
)
