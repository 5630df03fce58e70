package export

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
)

// Bounds on what an export may allocate. Configs come from strangers: the
// sizes they claim are checked against the tensors present and these bounds
// before anything proportional to them is allocated.
const (
	// MaxContext bounds a program's context C (--context): the RoPE tables
	// hold C rows per layer type and the K/V cache C slots per layer.
	MaxContext = 1 << 20
	// MaxCacheBytes bounds the K/V cache the program will ask every session
	// for: layers × 2 × C × kv_heads × head_dim × cache element size.
	MaxCacheBytes int64 = 64 << 30
)

// ErrConfigClaims means config.json describes a model the checkpoint's
// tensors do not hold (more layers, another vocabulary or width), or one
// beyond the bounds above; the error names the claim.
var ErrConfigClaims = errors.New("config.json does not match the checkpoint")

// checkClaims runs before any weight is converted: the embedding's shape
// must be the claimed [vocab, hidden], the claimed last layer's tensors
// must exist, so must every tensor the config implies, and the context and K/V cache must stay in bounds.
func (p *plan) checkClaims() error {
	s := p.spec
	if p.context > MaxContext {
		return fmt.Errorf("%w: context %d is beyond the bound %d (export.MaxContext)", ErrOptions, p.context, MaxContext)
	}
	embed, _ := p.ckpt.Tensor(p.src(s.Names.Embed))
	if want := []int{s.Vocab, s.Hidden}; !slices.Equal(embed.Shape, want) {
		return fmt.Errorf("%w: vocab_size %d and hidden_size %d imply %q of shape %v, the checkpoint's is %v",
			ErrConfigClaims, s.Vocab, s.Hidden, p.src(s.Names.Embed), want, embed.Shape)
	}
	for _, w := range s.LayerWeights(s.Layers - 1) {
		if w.Role == decoder.ExpertGate || w.Role == decoder.ExpertUp || w.Role == decoder.ExpertDown {
			continue // one missing expert is a missing tensor (below), not a claim about depth
		}
		if name := w.Name; !p.has(name) {
			return fmt.Errorf("%w: num_hidden_layers %d implies tensor %q, which the checkpoint does not hold",
				ErrConfigClaims, s.Layers, p.src(name))
		}
	}
	for _, w := range s.Weights() {
		if !p.has(w.Name) {
			return &TensorError{Name: p.src(w.Name), Problem: "missing from the checkpoint"}
		}
	}
	cacheBytes := int64(s.Layers) * 2 * int64(p.context) * int64(s.KVHeads*s.HeadDim) * int64(p.opts.CacheDType.ElemBytes())
	if cacheBytes > MaxCacheBytes {
		return fmt.Errorf("%w: the K/V cache of %d layers × context %d × %d kv heads × head_dim %d would take %d bytes, beyond the bound %d (export.MaxCacheBytes); export a shorter --context",
			ErrOptions, s.Layers, p.context, s.KVHeads, s.HeadDim, cacheBytes, MaxCacheBytes)
	}
	return nil
}

// has reports whether the checkpoint holds the spec's tensor name (through the layout).
func (p *plan) has(name string) bool {
	_, ok := p.ckpt.Tensor(p.src(name))
	return ok
}
