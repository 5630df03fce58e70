package ort

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"unsafe"
)

// Provider is an ONNX Runtime execution provider the executor can be pointed at. Only
// ProviderCPU is tested (the CPU build from npm has no other); the others are passed to
// ORT as its documentation says and are untested until a machine that has them runs the
// tests (docs/delegate.md, "Execution providers").
type Provider string

// Providers.
const (
	ProviderCPU      Provider = "cpu"
	ProviderCUDA     Provider = "cuda"
	ProviderCoreML   Provider = "coreml"
	ProviderDirectML Provider = "directml"
	ProviderQNN      Provider = "qnn"
	ProviderXNNPACK  Provider = "xnnpack"
	ProviderOpenVINO Provider = "openvino"
	ProviderWebGPU   Provider = "webgpu"
)

// Providers lists every Provider, in the order of the documentation.
var Providers = []Provider{ProviderCPU, ProviderCUDA, ProviderCoreML, ProviderDirectML, ProviderQNN, ProviderXNNPACK, ProviderOpenVINO, ProviderWebGPU}

// ortName is the name ORT's GetAvailableProviders reports for p.
func (p Provider) ortName() string {
	switch p {
	case ProviderCPU, "":
		return "CPUExecutionProvider"
	case ProviderCUDA:
		return "CUDAExecutionProvider"
	case ProviderCoreML:
		return "CoreMLExecutionProvider"
	case ProviderDirectML:
		return "DmlExecutionProvider"
	case ProviderQNN:
		return "QNNExecutionProvider"
	case ProviderXNNPACK:
		return "XnnpackExecutionProvider"
	case ProviderOpenVINO:
		return "OpenVINOExecutionProvider"
	case ProviderWebGPU:
		return "WebGpuExecutionProvider"
	}
	return ""
}

// ErrProvider reports an execution provider that cannot be used: unknown to hfstatic or
// not built into the library; the *ProviderError that wraps it says which.
var ErrProvider = errors.New("onnxruntime execution provider unusable")

// ProviderError says why an execution provider cannot be used.
type ProviderError struct {
	Provider  Provider
	Path      string   // the library
	Available []string // the providers the library lists (ORT's names)
	Problem   string
	cause     error // ORT's error, when ORT refused it
}

func (e *ProviderError) Error() string {
	msg := fmt.Sprintf("onnxruntime execution provider %q: %s", e.Provider, e.Problem)
	if e.cause != nil {
		msg += ": " + e.cause.Error()
	}
	if e.Path != "" {
		msg += fmt.Sprintf(" (the library %s lists %s)", e.Path, strings.Join(e.Available, ", "))
	}
	return msg
}

func (e *ProviderError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrProvider, e.cause}
	}
	return []error{ErrProvider}
}

// ParseProvider checks a provider name (as --ort-provider takes it).
func ParseProvider(s string) (Provider, error) {
	p := Provider(strings.ToLower(s))
	if p == "" {
		return ProviderCPU, nil
	}
	if !slices.Contains(Providers, p) {
		names := make([]string, len(Providers))
		for i, q := range Providers {
			names[i] = string(q)
		}
		return "", &ProviderError{Provider: Provider(s), Problem: "unknown; want one of " + strings.Join(names, ", ")}
	}
	return p, nil
}

// AvailableProviders returns the execution providers built into the library (ORT's
// names, e.g. CPUExecutionProvider).
func (l *Lib) AvailableProviders() ([]string, error) {
	var list uintptr
	var n int32
	if err := l.call("list execution providers", fnGetAvailableProviders, uintptr(unsafe.Pointer(&list)), uintptr(unsafe.Pointer(&n))); err != nil {
		return nil, err
	}
	out := make([]string, 0, n)
	for i := range int(n) {
		out = append(out, goString(*(*uintptr)(unsafe.Add(cptr(list), i*int(unsafe.Sizeof(uintptr(0)))))))
	}
	l.call("release execution provider list", fnReleaseAvailableProviders, list, uintptr(n))
	return out, nil
}

// checkProvider returns a *ProviderError unless the library has p.
func (l *Lib) checkProvider(p Provider) error {
	name := p.ortName()
	if name == "" {
		_, err := ParseProvider(string(p))
		return err
	}
	have, err := l.AvailableProviders()
	if err != nil {
		return err
	}
	if !slices.Contains(have, name) {
		return &ProviderError{Provider: p, Path: l.Path, Available: have, Problem: "not built into this ONNX Runtime library (" + name + " missing)"}
	}
	return nil
}

// appendProvider adds p (ahead of the CPU provider, which ORT always keeps for the nodes p
// cannot run) to session options opts. The CPU provider needs nothing. ORT's own failure
// (a provider listed by the library whose shared library or device is missing) comes back
// as a *ProviderError wrapping ORT's *Error.
func (l *Lib) appendProvider(what string, opts uintptr, p Provider) error {
	if p == "" || p == ProviderCPU {
		return nil
	}
	if err := l.checkProvider(p); err != nil {
		return err
	}
	if err := l.enableProvider(what, opts, p); err != nil {
		have, _ := l.AvailableProviders()
		return &ProviderError{Provider: p, Path: l.Path, Available: have, Problem: "ONNX Runtime could not enable it", cause: err}
	}
	return nil
}

func (l *Lib) enableProvider(what string, opts uintptr, p Provider) error {
	op := fmt.Sprintf("append execution provider %s for %s", p, what)
	switch p {
	case ProviderCUDA:
		var co uintptr
		if err := l.call(op, fnCreateCUDAProviderOptions, uintptr(unsafe.Pointer(&co))); err != nil {
			return err
		}
		defer l.release(fnReleaseCUDAProviderOptions, co)
		return l.call(op, fnAppendCUDA, opts, co)
	case ProviderDirectML:
		// DirectML has its own API table (OrtDmlApi, whose first function is
		// SessionOptionsAppendExecutionProvider_DML(options, device_id)); it runs without
		// memory patterns, sequentially (set for every session).
		var strs cstrings
		var api uintptr
		err := l.call(op, fnGetExecutionProviderAPI, strs.add("DML"), apiVersion, uintptr(unsafe.Pointer(&api)))
		runtime.KeepAlive(strs)
		if err != nil {
			return err
		}
		if err := l.call(op, fnDisableMemPattern, opts); err != nil {
			return err
		}
		return l.callAt(op, *(*uintptr)(cptr(api)), opts, 0)
	}
	var strs cstrings
	err := l.call(op, fnAppendExecutionProvider, opts, strs.add(p.ortName()), 0, 0, 0)
	runtime.KeepAlive(strs)
	return err
}
