package export

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/kernels"
)

// Rotations of the residual stream (Options.Rotate).
const (
	RotateNone     = "none"
	RotateHadamard = "hadamard"
)

// rotationSeed seeds the signs of the Hadamard rotation: a fixed value, so that the same
// checkpoint always gives the same program.
const rotationSeed = 0x68667374 // "hfst"

// rotationEligible reports why a spec's residual stream cannot be rotated ("" if it can):
// the graph must be plain pre-norm, every sublayer reading RMSNorm(x)·γ and adding its output
// to x unnormalized, so that with γ fused into the matrices that read the norm,
// RMSNorm(x·Q) = RMSNorm(x)·Q for any orthogonal Q.
func rotationEligible(s *decoder.Spec) string {
	switch {
	case s.SandwichNorms:
		return "its post-sublayer norms (Gemma 2/3) normalize what is added to the residual stream"
	case s.NoPreNorms:
		return "its sublayers read the residual stream without a norm (OLMo 2)"
	}
	return ""
}

// rotation is an orthogonal d×d matrix Q applied to row vectors, v ← v·Q:
// Q = diag(signs)·blockdiag(H, …, H)/√block, H the Sylvester Hadamard matrix of order block,
// the largest power of two dividing d, and the signs ±1 drawn from a fixed seed.
type rotation struct {
	d, block int
	signs    []float64
}

// newRotation returns the rotation of a d-wide stream, or an error when d has no
// power-of-two factor of at least kernels.BlockSize (a Hadamard block narrower than a
// quantization block would not mix the block's channels).
func newRotation(kind string, d int) (*rotation, error) {
	if kind != RotateHadamard {
		return nil, fmt.Errorf("%w: rotate %q must be %s or %s", ErrOptions, kind, RotateNone, RotateHadamard)
	}
	r := &rotation{d: d, block: d & -d}
	if r.block < kernels.BlockSize {
		return nil, fmt.Errorf("%w: rotate %s: hidden size %d has no power-of-two factor ≥ %d", ErrOptions, kind, d, kernels.BlockSize)
	}
	rng := rand.New(rand.NewPCG(rotationSeed, uint64(d)))
	r.signs = make([]float64, d)
	for i := range r.signs {
		r.signs[i] = 1
		if rng.Uint64()&1 == 1 {
			r.signs[i] = -1
		}
	}
	return r, nil
}

// apply sets v ← (v ⊙ gain)·Q in place (gain nil: all ones); buf holds d values.
func (r *rotation) apply(v []float32, gain []float32, buf []float64) {
	for i := range buf {
		buf[i] = float64(v[i])
		if gain != nil {
			buf[i] *= float64(gain[i])
		}
	}
	for i := range buf {
		buf[i] *= r.signs[i]
	}
	for b := 0; b < r.d; b += r.block {
		fwht(buf[b : b+r.block])
	}
	scale := 1 / math.Sqrt(float64(r.block))
	for i := range buf {
		v[i] = float32(buf[i] * scale)
	}
}

// fwht is the unnormalized fast Walsh-Hadamard transform (Sylvester order) of x, whose
// length is a power of two.
func fwht(x []float64) {
	for h := 1; h < len(x); h *= 2 {
		for i := 0; i < len(x); i += 2 * h {
			for j := i; j < i+h; j++ {
				a, b := x[j], x[j+h]
				x[j], x[j+h] = a+b, a-b
			}
		}
	}
}

// rotateRows sets each row w of a [rows, d] matrix to (w ⊙ gain)·Q: a matrix that reads the
// residual stream (after a norm of gain gain, fused here).
func (r *rotation) rotateRows(vals []float32, gain []float32) {
	buf := make([]float64, r.d)
	for i := 0; i < len(vals); i += r.d {
		r.apply(vals[i:i+r.d], gain, buf)
	}
}

// rotateCols sets a [d, cols] matrix W to Qᵀ·W: a matrix that writes into the residual
// stream (a bias is a [d, 1] matrix).
func (r *rotation) rotateCols(vals []float32, cols int) {
	buf := make([]float64, r.d)
	col := make([]float32, r.d)
	for c := range cols {
		for i := range col {
			col[i] = vals[i*cols+c]
		}
		r.apply(col, nil, buf)
		for i := range col {
			vals[i*cols+c] = col[i]
		}
	}
}

// planRotation decides p.rot from the options and the spec, and unties a tied output
// projection when rotating.
func (p *plan) planRotation() error {
	kind := p.opts.Rotate
	if kind == "" || kind == RotateNone {
		return nil
	}
	if why := rotationEligible(p.spec); why != "" {
		return fmt.Errorf("%w: rotate %s: %s", ErrOptions, kind, why)
	}
	r, err := newRotation(kind, p.spec.Hidden)
	if err != nil {
		return err
	}
	p.rot = r
	if p.spec.Tied {
		// The head reads RMSNorm(x·Q)·γ_final: unless γ_final is fused into it, the gain would
		// apply in the rotated basis. Fused, the head is no longer the embedding.
		s := *p.spec
		s.Tied = false
		if s.Names.LMHead == "" || s.Names.LMHead == s.Names.Embed {
			s.Names.LMHead = "lm_head.weight"
		}
		p.spec, p.untied = &s, true
	}
	return nil
}

// normFor is the pre-norm whose output a matrix of role r reads ("" for none).
func normFor(r decoder.Role) decoder.Role {
	switch r {
	case decoder.Q, decoder.K, decoder.V:
		return decoder.AttnNorm
	case decoder.Gate, decoder.Up, decoder.Router, decoder.ExpertGate, decoder.ExpertUp:
		return decoder.FFNNorm
	case decoder.LMHead:
		return decoder.FinalNorm
	}
	return ""
}

// gain reads the effective gain (NormOffset added) of layer l's norm of role r.
func (p *plan) gain(l int, r decoder.Role) ([]float32, error) {
	name := p.spec.Names.FinalNorm
	if r != decoder.FinalNorm {
		name = p.spec.Names.Layer(l, r)
	}
	g, _, err := p.ckpt.Float32(p.src(name))
	if err != nil {
		return nil, err
	}
	if len(g) != p.spec.Hidden {
		return nil, fmt.Errorf("norm %s has %d values, want %d", name, len(g), p.spec.Hidden)
	}
	for i := range g {
		g[i] += p.spec.NormOffset
	}
	return g, nil
}

// rotate applies the residual stream's rotation to the values of weight it in place. It
// reports whether it is a pre-norm whose gain was fused (its values then all 1, with no
// NormOffset to add).
func (p *plan) rotate(it decoder.Weight, vals []float32) (fused bool, err error) {
	r := p.rot
	if r == nil {
		return false, nil
	}
	switch it.Role {
	case decoder.AttnNorm, decoder.FFNNorm, decoder.FinalNorm:
		for i := range vals {
			vals[i] = 1
		}
		return true, nil
	case decoder.Embed:
		r.rotateRows(vals, nil)
	case decoder.O, decoder.Down, decoder.ExpertDown:
		r.rotateCols(vals, it.Shape[1])
	case decoder.OBias, decoder.DownBias:
		r.rotateCols(vals, 1)
	default:
		n := normFor(it.Role)
		if n == "" {
			return false, nil
		}
		g, err := p.gain(it.Layer, n)
		if err != nil {
			return false, err
		}
		r.rotateRows(vals, g)
	}
	return false, nil
}
