package ort

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/hfstatic/hfstatic/program"
)

// ONNX TensorProto element types.
const (
	elemFloat   = 1
	elemUint8   = 2
	elemInt8    = 3
	elemInt64   = 7
	elemBool    = 9
	elemFloat16 = 10
	elemBF16    = 16
)

// elemType is the ONNX element type of a plain program dtype.
func elemType(d program.DType) (int, error) {
	switch d {
	case program.F32:
		return elemFloat, nil
	case program.F16:
		return elemFloat16, nil
	case program.BF16:
		return elemBF16, nil
	case program.I64:
		return elemInt64, nil
	case program.Bool:
		return elemBool, nil
	}
	return 0, fmt.Errorf("dtype %s has no ONNX tensor type", d)
}

// tensor creates an OrtValue over data (not copied: data must outlive the value and
// stay where it is). shape is outermost first.
func (l *Lib) tensor(what string, data []byte, elem int, shape []int64) (uintptr, error) {
	var v uintptr
	if len(data) == 0 || len(shape) == 0 {
		return 0, fmt.Errorf("ort: tensor %s: empty data or shape", what)
	}
	err := l.call("create tensor "+what, fnCreateTensorWithDataAsOrtValue, l.cpu, uintptr(unsafe.Pointer(unsafe.SliceData(data))), uintptr(len(data)),
		uintptr(unsafe.Pointer(unsafe.SliceData(shape))), uintptr(len(shape)), uintptr(elem), uintptr(unsafe.Pointer(&v)))
	runtime.KeepAlive(data)
	runtime.KeepAlive(shape)
	return v, err
}

// shape64 converts a program shape.
func shape64(s program.Shape) []int64 {
	out := make([]int64, len(s))
	for i, d := range s {
		out[i] = int64(d)
	}
	return out
}

// spinMicros is how long an idle intra-op worker spins before it sleeps.
const spinMicros = "50"

// sessionOptions are the settings of one ORT session.
type sessionOptions struct {
	threads  int
	spin     bool
	profile  string             // file prefix for ORT's profiler; "" is off
	weights  map[string]uintptr // initializers read in place (AddInitializer)
	copied   map[string]uintptr // initializers copied into the graph (AddExternalInitializers)
	optLevel int
	config   [][2]string // session config entries (AddSessionConfigEntry)
	prepack  uintptr     // OrtPrepackedWeightsContainer* shared by the sessions; 0: none
	provider Provider
}

// newSession creates a session from model bytes (copied by ORT while it parses them).
// The values in o.weights are the model's initializers of the same names (AddInitializer:
// ORT reads them where they are, without a copy; they must outlive the session); those in
// o.copied too, but ORT copies them into the graph first (AddExternalInitializers), which
// its constant folding needs (onnx.Resolved.Folded). The model's references to both must
// already be resolved (onnx.Resolve).
func (l *Lib) newSession(what string, model []byte, o sessionOptions) (uintptr, error) {
	var opts uintptr
	if err := l.call("create session options", fnCreateSessionOptions, uintptr(unsafe.Pointer(&opts))); err != nil {
		return 0, err
	}
	defer l.release(fnReleaseSessionOptions, opts)
	var strs cstrings
	defer runtime.KeepAlive(&strs)
	// Idle workers spin briefly, then sleep (the Go executor's pool does the same, for
	// 50 µs): a step's ops follow each other within microseconds, and a worker woken from
	// sleep for each costs more than the spin; between steps the CPU goes to others. Spin
	// keeps ORT's own policy (spinning much longer).
	spin := [][2]string{{"session.intra_op.allow_spinning", "1"}, {"session.intra_op.spin_duration_us", spinMicros}}
	if o.spin {
		spin = spin[:1]
	}
	for _, c := range []struct {
		what string
		fn   int
		arg  uintptr
	}{
		{"set intra-op threads", fnSetIntraOpNumThreads, uintptr(o.threads)},
		{"set inter-op threads", fnSetInterOpNumThreads, 1},
		{"set execution mode", fnSetSessionExecutionMode, ortSequential},
		{"set optimization level", fnSetSessionGraphOptimizationLvl, uintptr(o.optLevel)},
	} {
		if err := l.call(c.what+" for "+what, c.fn, opts, c.arg); err != nil {
			return 0, err
		}
	}
	config := append(spin, o.config...)
	for _, kv := range config {
		if err := l.call(fmt.Sprintf("set %s=%s for %s", kv[0], kv[1], what), fnAddSessionConfigEntry, opts, strs.add(kv[0]), strs.add(kv[1])); err != nil {
			return 0, err
		}
	}
	if o.profile != "" {
		if err := l.call("enable profiling for "+what, fnEnableProfiling, opts, strs.add(o.profile)); err != nil {
			return 0, err
		}
	}
	for name, v := range o.weights {
		if err := l.call(fmt.Sprintf("add initializer %q for %s", name, what), fnAddInitializer, opts, strs.add(name), v); err != nil {
			return 0, err
		}
	}
	if len(o.copied) > 0 {
		names := make([]uintptr, 0, len(o.copied))
		values := make([]uintptr, 0, len(o.copied))
		for name, v := range o.copied {
			names = append(names, strs.add(name))
			values = append(values, v)
		}
		err := l.call("add external initializers for "+what, fnAddExternalInitializers, opts,
			uintptr(unsafe.Pointer(unsafe.SliceData(names))), uintptr(unsafe.Pointer(unsafe.SliceData(values))), uintptr(len(names)))
		runtime.KeepAlive(names)
		runtime.KeepAlive(values)
		if err != nil {
			return 0, err
		}
	}
	if err := l.appendProvider(what, opts, o.provider); err != nil {
		return 0, err
	}
	var sess uintptr
	var err error
	if o.prepack != 0 {
		err = l.call("create session for "+what, fnCreateSessionFromArrayPrepack, l.env,
			uintptr(unsafe.Pointer(unsafe.SliceData(model))), uintptr(len(model)), opts, o.prepack, uintptr(unsafe.Pointer(&sess)))
	} else {
		err = l.call("create session for "+what, fnCreateSessionFromArray, l.env,
			uintptr(unsafe.Pointer(unsafe.SliceData(model))), uintptr(len(model)), opts, uintptr(unsafe.Pointer(&sess)))
	}
	runtime.KeepAlive(model)
	return sess, err
}

// newPrepackedWeights creates a container in which sessions share the weights their
// kernels prepack (one packed copy for all of a program's sessions).
func (l *Lib) newPrepackedWeights() (uintptr, error) {
	var c uintptr
	err := l.call("create prepacked weights container", fnCreatePrepackedWeights, uintptr(unsafe.Pointer(&c)))
	return c, err
}

// endProfiling stops the session's profiler and returns the profile file's name.
func (l *Lib) endProfiling(sess uintptr) (string, error) {
	var alloc, out uintptr
	if err := l.call("get default allocator", fnGetAllocatorWithDefaultOptions, uintptr(unsafe.Pointer(&alloc))); err != nil {
		return "", err
	}
	if err := l.call("end profiling", fnSessionEndProfiling, sess, alloc, uintptr(unsafe.Pointer(&out))); err != nil {
		return "", err
	}
	name := goString(out)
	l.call("free profile name", fnAllocatorFree, alloc, out)
	return name, nil
}
