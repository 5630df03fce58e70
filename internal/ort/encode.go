package ort

import (
	"fmt"
	"unsafe"

	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// An hf_encode method (docs/contract.md, section 10) on ONNX Runtime: its graph
// (internal/onnx's buildEncodeMethod) reads input_ids, attention_mask and token_type_ids
// and writes the embeddings or scores, all bound in place; there are no caches.

// sequences is what an hf_encode step checks before it runs: its [B][S] mask.
type sequences struct {
	mask []byte
	B, S int
}

// bindEncode binds an hf_encode method's inputs and output to the caller's buffers.
func (e *Executor) bindEncode(m *method, bufs map[string][]byte) (runner.Step, error) {
	spec := m.spec
	s := &Step{e: e, m: m}
	if err := e.lib.call(fmt.Sprintf("create I/O binding for method %q", spec.Name), fnCreateIoBinding, m.session, uintptr(unsafe.Pointer(&s.binding))); err != nil {
		return nil, err
	}
	for _, list := range []struct {
		ios []program.IO
		fn  int
	}{{spec.Inputs, fnBindInput}, {spec.Outputs, fnBindOutput}} {
		for _, b := range list.ios {
			buf, ok := bufs[b.Name]
			if !ok || len(buf) != b.Bytes() || (len(buf) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%8 != 0) {
				s.release()
				return nil, fmt.Errorf("ort: method %q: buffer %q missing, of %d bytes instead of %d, or not 8-byte aligned", spec.Name, b.Name, len(buf), b.Bytes())
			}
			elem, err := elemType(b.DType)
			if err == nil {
				var v uintptr
				if v, err = e.lib.tensor(b.Name, buf, elem, shape64(b.Shape)); err == nil {
					s.values = append(s.values, v)
					err = e.bindValue(s, list.fn, b.Name, v)
				}
			}
			if err != nil {
				s.release()
				return nil, err
			}
		}
	}
	mask, _ := spec.Input(program.AttentionMask)
	s.seqs = &sequences{mask: bufs[program.AttentionMask], B: mask.Shape[0], S: mask.Shape[1]}
	s.runArgs = []uintptr{m.session, 0, s.binding}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		s.release()
		return nil, fmt.Errorf("ort: method %q: executor closed", spec.Name)
	}
	e.steps[s] = struct{}{}
	return s, nil
}

// runEncode checks the mask as hfstatic's executor does (real tokens first in every row,
// used rows first, one real token at least), then runs the graph.
func (s *Step) runEncode() error {
	q := s.seqs
	used, ended := 0, false
	for b := range q.B {
		row := q.mask[b*q.S : (b+1)*q.S]
		n := 0
		for n < q.S && row[n] != 0 {
			n++
		}
		for i := n; i < q.S; i++ {
			if row[i] != 0 {
				return fmt.Errorf("method %q: %w: attention_mask row %d has a real token at %d after padding", s.m.spec.Name, ErrStep, b, i)
			}
		}
		if n > 0 && ended {
			return fmt.Errorf("method %q: %w: attention_mask row %d is used after an empty row", s.m.spec.Name, ErrStep, b)
		}
		ended = ended || n == 0
		used += min(n, 1)
	}
	if used == 0 {
		return fmt.Errorf("method %q: %w: attention_mask has no real token", s.m.spec.Name, ErrStep)
	}
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || s.binding == 0 {
		return fmt.Errorf("ort: method %q: step used after Close", s.m.spec.Name)
	}
	if st := syscallN(e.lib.fn[fnRunWithBinding], s.runArgs...); st != 0 {
		return e.lib.status(fmt.Sprintf("run method %q", s.m.spec.Name), st)
	}
	return nil
}
