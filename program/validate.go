package program

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// validate checks the manifest's structure. dataEnd is the end of the data section (the
// manifest offset) or -1 when the ranges are not yet known to lie in a file.
func (m *Manifest) validate(dataEnd int64) error {
	names := map[string]bool{}
	checkRange := func(item string, off, size int64) error {
		if off%Alignment != 0 || off < headerSize || size < 0 {
			return &FormatError{Item: item, Problem: fmt.Sprintf("bad data range offset %d size %d", off, size)}
		}
		if dataEnd >= 0 && (off > dataEnd || size > dataEnd-off) {
			return &FormatError{Item: item, Problem: fmt.Sprintf("data [%d,+%d) lies outside the data section (ends at %d)", off, size, dataEnd)}
		}
		return nil
	}
	for _, t := range m.Tensors {
		item := fmt.Sprintf("tensor %q", t.Name)
		if t.Name == "" || names[t.Name] {
			return &FormatError{Item: item, Problem: "empty or duplicate name"}
		}
		names[t.Name] = true
		if !t.DType.valid() {
			return &FormatError{Item: item, Problem: fmt.Sprintf("unknown dtype %q", t.DType)}
		}
		if err := checkShape(t.Shape); err != nil {
			return &FormatError{Item: item, Problem: err.Error()}
		}
		if eb := t.DType.ElemBytes(); eb > 0 && int64(t.Shape.Elems()*eb) != t.Size {
			return &FormatError{Item: item, Problem: fmt.Sprintf("size %d does not match %s %v", t.Size, t.DType, t.Shape)}
		}
		if err := checkRange(item, t.Offset, t.Size); err != nil {
			return err
		}
	}
	assets := map[string]bool{}
	for _, a := range m.Assets {
		item := fmt.Sprintf("asset %q", a.Name)
		if a.Name == "" || assets[a.Name] {
			return &FormatError{Item: item, Problem: "empty or duplicate name"}
		}
		assets[a.Name] = true
		if err := checkRange(item, a.Offset, a.Size); err != nil {
			return err
		}
	}
	if len(m.Methods) == 0 {
		return &FormatError{Item: "methods", Problem: "program has no methods"}
	}
	methods := map[string]bool{}
	for i := range m.Methods {
		mt := &m.Methods[i]
		if mt.Name == "" || methods[mt.Name] {
			return &FormatError{Item: fmt.Sprintf("method %q", mt.Name), Problem: "empty or duplicate name"}
		}
		methods[mt.Name] = true
		if err := mt.validate(names); err != nil {
			return err
		}
	}
	return nil
}

func checkShape(s Shape) error {
	var n int64 = 1
	for _, d := range s {
		if d <= 0 {
			return fmt.Errorf("shape %v has a non-positive dimension", s)
		}
		if n > (1<<50)/int64(d) {
			return fmt.Errorf("shape %v is too large", s)
		}
		n *= int64(d)
	}
	return nil
}

// elems64 is the product of a checked shape's dimensions, computed without overflow on
// 32-bit platforms (where Shape.Elems may overflow int).
func elems64(s Shape) int64 {
	var n int64 = 1
	for _, d := range s {
		n *= int64(d)
	}
	return n
}

// AddressLimit is the most memory a program may need on this platform: the file (mapped or
// read) and one session's buffers together, and any one tensor's elements. On 64-bit
// platforms it is 2^50 bytes, beyond any real program. On 32-bit ones (386, arm) it is
// math.MaxInt, 2 GiB - 1: no Go slice can be larger, and the 3 to 4 GiB address space also
// holds the Go heap, the stacks and the libraries' mappings.
const AddressLimit = min(1<<50, math.MaxInt)

// ErrTooLarge reports a valid program that this platform's address space cannot hold; the
// *FitError that wraps it says what does not fit.
var ErrTooLarge = errors.New("program too large for this platform's address space")

// FitError reports a program that needs more than AddressLimit: Item is what does not fit,
// Need what it takes, in bytes (the program file and one session's buffers) or, when
// Elements is set, in elements (one tensor, whose slices of elements are indexed by int).
type FitError struct {
	Item     string
	Need     int64
	Limit    int64
	Elements bool
}

func (e *FitError) Error() string {
	unit := "bytes"
	if e.Elements {
		unit = "elements"
	}
	return fmt.Sprintf("program: %s needs %d %s, more than this %d-bit platform can address (%d): run it on a 64-bit build of hfstatic, or export a smaller program (--context, --weights q8 or q4)",
		e.Item, e.Need, unit, strconv.IntSize, e.Limit)
}

func (e *FitError) Unwrap() error { return ErrTooLarge }

// fit checks that a program of fileSize bytes with manifest m fits in limit bytes (see
// AddressLimit): every tensor's element count, and its footprint. m must have passed validate.
func (m *Manifest) fit(fileSize, limit int64) error {
	for _, t := range m.Tensors {
		if n := elems64(t.Shape); n > limit {
			return &FitError{Item: fmt.Sprintf("tensor %q", t.Name), Need: n, Limit: limit, Elements: true}
		}
	}
	if n := m.footprint(fileSize); n > limit {
		return &FitError{Item: "the program file with one session's buffers", Need: n, Limit: limit}
	}
	return nil
}

// footprint bounds from above the memory a program of fileSize bytes takes with one
// session: the file, each method's inputs and outputs (the state the methods share, the
// caches and counters, counted once) and each method's activations (which the executor may
// overlap). It saturates at math.MaxInt64.
func (m *Manifest) footprint(fileSize int64) int64 {
	total := fileSize
	seen := map[string]bool{}
	for _, mt := range m.Methods {
		for k, list := range [][]IO{mt.Inputs, mt.Outputs, mt.Activations} {
			for _, b := range list {
				key := mt.Name + "/" + b.Name
				if k < 2 && stateBuffer(b.Name) {
					key = b.Name
				}
				if seen[key] {
					continue
				}
				seen[key] = true
				n := elems64(b.Shape) * int64(b.DType.ElemBytes()) // ≤ 2^53 (checkShape)
				if total > math.MaxInt64-n {
					return math.MaxInt64
				}
				total += n
			}
		}
	}
	return total
}

// stateBuffer reports whether a method buffer is session state shared by the methods (the
// caches and counters) rather than one method's own input or output.
func stateBuffer(name string) bool {
	switch name {
	case InputIDs, AttentionMask, PositionIDs, Logits:
		return false
	}
	return true
}

func (mt *Method) validate(constants map[string]bool) error {
	item := fmt.Sprintf("method %q", mt.Name)
	if mt.Step < 1 {
		return &FormatError{Item: item, Problem: fmt.Sprintf("step %d < 1", mt.Step)}
	}
	if mt.Logits != LogitsAll && mt.Logits != LogitsLast {
		return &FormatError{Item: item, Problem: fmt.Sprintf("logits rows %q is not %q or %q", mt.Logits, LogitsAll, LogitsLast)}
	}
	// Every buffer name resolves to exactly one thing.
	kind := map[string]string{}
	for n := range constants {
		kind[n] = "constant"
	}
	declare := func(list []IO, what string) error {
		for _, b := range list {
			if b.Name == "" {
				return &FormatError{Item: item, Problem: what + " with an empty name"}
			}
			if !b.DType.valid() || b.DType.Quantized() {
				return &FormatError{Item: fmt.Sprintf("%s %s %q", item, what, b.Name), Problem: fmt.Sprintf("dtype %q", b.DType)}
			}
			if err := checkShape(b.Shape); err != nil {
				return &FormatError{Item: fmt.Sprintf("%s %s %q", item, what, b.Name), Problem: err.Error()}
			}
			if prev, ok := kind[b.Name]; ok && !(prev == "input" && what == "output") {
				return &FormatError{Item: fmt.Sprintf("%s %s %q", item, what, b.Name), Problem: "name already used by a " + prev}
			}
			if prev := kind[b.Name]; prev == "input" {
				kind[b.Name] = "in-place buffer"
			} else {
				kind[b.Name] = what
			}
		}
		return nil
	}
	if err := declare(mt.Inputs, "input"); err != nil {
		return err
	}
	if err := declare(mt.Outputs, "output"); err != nil {
		return err
	}
	if err := declare(mt.Activations, "activation"); err != nil {
		return err
	}
	for _, b := range mt.Activations {
		if b.DType != F32 {
			return &FormatError{Item: fmt.Sprintf("%s activation %q", item, b.Name), Problem: "activations are f32"}
		}
	}
	// Data flow: an op reads only constants, method inputs (in-place
	// buffers included) and buffers an earlier op wrote.
	written := map[string]bool{}
	for i := range mt.Ops {
		op := &mt.Ops[i]
		opItem := fmt.Sprintf("%s op %d (%s)", item, i, op.Kind)
		if err := op.check(); err != nil {
			return &FormatError{Item: opItem, Problem: err.Error()}
		}
		for _, n := range op.In {
			switch k, ok := kind[n]; {
			case !ok:
				return &FormatError{Item: opItem, Problem: fmt.Sprintf("input %q is not a constant, method input or activation", n)}
			case (k == "activation" || k == "output") && !written[n]:
				return &FormatError{Item: opItem, Problem: fmt.Sprintf("reads %s %q before any op writes it", k, n)}
			}
		}
		for _, n := range op.Out {
			switch kind[n] {
			case "activation", "output", "in-place buffer":
				written[n] = true
			default:
				return &FormatError{Item: opItem, Problem: fmt.Sprintf("output %q is not an activation or method output (a %s)", n, kind[n])}
			}
		}
	}
	return nil
}
