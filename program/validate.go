package program

import "fmt"

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
	n := 1
	for _, d := range s {
		if d <= 0 {
			return fmt.Errorf("shape %v has a non-positive dimension", s)
		}
		if n > (1<<50)/d {
			return fmt.Errorf("shape %v is too large", s)
		}
		n *= d
	}
	return nil
}

func (mt *Method) validate(constants map[string]bool) error {
	item := fmt.Sprintf("method %q", mt.Name)
	if mt.Step < 1 {
		return &FormatError{Item: item, Problem: fmt.Sprintf("step %d < 1", mt.Step)}
	}
	if mt.Logits != "" && mt.Logits != LogitsAll && mt.Logits != LogitsLast {
		return &FormatError{Item: item, Problem: fmt.Sprintf("logits rows %q is not %q, %q or absent", mt.Logits, LogitsAll, LogitsLast)}
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
