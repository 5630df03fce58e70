package safetensors

import (
	"errors"
	"fmt"
)

// ErrTruncated reports a file shorter than its header says. It is wrapped by
// a *FormatError; test with errors.Is.
var ErrTruncated = errors.New("safetensors: file truncated")

// ErrUnsupportedDType reports a conversion that is not implemented for a
// tensor's dtype (for example Float32 of an I64 tensor).
var ErrUnsupportedDType = errors.New("safetensors: unsupported dtype for conversion")

// FormatError describes an invalid safetensors file.
type FormatError struct {
	Tensor  string // offending tensor name; empty for problems of the header as a whole
	Problem string // what is wrong
	Err     error  // an underlying sentinel such as ErrTruncated, or nil
}

func (e *FormatError) Error() string {
	if e.Tensor == "" {
		return "safetensors: invalid header: " + e.Problem
	}
	return fmt.Sprintf("safetensors: tensor %q: %s", e.Tensor, e.Problem)
}

func (e *FormatError) Unwrap() error { return e.Err }

func formatErr(tensor, format string, args ...any) *FormatError {
	return &FormatError{Tensor: tensor, Problem: fmt.Sprintf(format, args...)}
}

func truncatedErr(tensor, format string, args ...any) *FormatError {
	return &FormatError{Tensor: tensor, Problem: fmt.Sprintf(format, args...), Err: ErrTruncated}
}
