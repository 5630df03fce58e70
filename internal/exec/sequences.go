package exec

import (
	"fmt"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/program"
)

// A method over a batch of sequences (an hf_encode method: its attention_mask is [B, S])
// runs B independent sequences of at most S tokens in one step, with no state. A step's
// used sequences become the segments of one pass: their real rows are concatenated, so
// each linear layer is one matrix product over all of them, while self_attention and pool
// work on each sequence's own rows. A token's position is its index in its sequence.

// sequences is the per-step state of such a method.
type sequences struct {
	ids, types []int64 // the bound input_ids and token_type_ids, [B][S] (types nil if absent)
	gathered   []int64 // (B·S): the real tokens' types, concatenated (nil if absent)
	lens       []int   // real tokens of each used sequence, in batch order
}

// sequenceShape reports whether a method runs a batch of sequences, and its B and S.
func sequenceShape(spec *program.Method) (batch, seqLen int) {
	if mask, ok := spec.Input(program.AttentionMask); ok && len(mask.Shape) == 2 {
		return mask.Shape[0], mask.Shape[1]
	}
	return 0, 0
}

// bindSequences prepares a step of a method over sequences: the real tokens' ids,
// positions and types are gathered into the step's own buffers before each run.
func (s *Step) bindSequences(io map[string][]byte) {
	B, S := s.m.batch, s.m.seqLen
	q := &sequences{ids: align.AsI64(io[program.InputIDs]), lens: make([]int, 0, B)}
	if b, ok := io[program.TokenTypeIDs]; ok {
		q.types, q.gathered = align.AsI64(b), make([]int64, B*S)
	}
	s.seq = q
	s.ids, s.positions = make([]int64, B*S), make([]int64, B*S)
}

// readSequences derives each sequence's real tokens from the mask and gathers them: real
// tokens first in every row, used rows first in the batch, at least one real token.
func (s *Step) readSequences() error {
	B, S, q := s.m.batch, s.m.seqLen, s.seq
	q.lens = q.lens[:0]
	total := 0
	for b := range B {
		row := s.mask[b*S : (b+1)*S]
		n := 0
		for n < S && row[n] != 0 {
			n++
		}
		for i := n; i < S; i++ {
			if row[i] != 0 {
				return fmt.Errorf("%w: attention_mask row %d has a real token at %d after padding at %d (real tokens come first)", ErrStep, b, i, n)
			}
		}
		if n == 0 {
			continue
		}
		if len(q.lens) != b {
			return fmt.Errorf("%w: attention_mask row %d is used after an empty row %d (used rows come first)", ErrStep, b, len(q.lens))
		}
		q.lens = append(q.lens, n)
		copy(s.ids[total:total+n], q.ids[b*S:b*S+n])
		if q.types != nil {
			copy(q.gathered[total:total+n], q.types[b*S:b*S+n])
		}
		for i := range n {
			s.positions[total+i] = int64(i)
		}
		total += n
	}
	if total == 0 {
		return fmt.Errorf("%w: attention_mask has no real token", ErrStep)
	}
	s.pos, s.n = 0, total
	return nil
}

// realTypes returns the real tokens' types of a step over sequences (nil if it has none).
func (s *Step) realTypes() []int64 {
	if s.seq == nil || s.seq.gathered == nil {
		return nil
	}
	return s.seq.gathered[:s.n]
}

// runSequences runs a step over sequences as one pass, one segment per used sequence;
// p.mu is held. A refused step changes nothing.
func (p *Program) runSequences(s *Step) error {
	if err := s.begin(); err != nil {
		return err
	}
	m, ps := s.m, &p.pass
	ps.segs, ps.rows, ps.sel = ps.segs[:0], 0, 0
	for i, n := range s.seq.lens {
		ps.segs = append(ps.segs, segment{s: s, off: ps.rows, n: n, selOff: i, sel: 1})
		ps.rows += n
	}
	ps.sel = len(s.seq.lens)
	p.grow()
	ps.ids, ps.positions, ps.types = s.ids[:ps.rows], s.positions[:ps.rows], s.realTypes()
	out := align.AsF32(s.bufs[m.output])
	ps.act[m.output] = out
	for _, o := range m.ops {
		o.run(ps)
	}
	// Rows of unused sequences hold zeros, not an earlier call's values.
	w := m.outWidth
	if s.outRows > ps.sel {
		clear(out[ps.sel*w : s.outRows*w])
	}
	s.outRows = ps.sel
	ps.types = nil
	return nil
}
