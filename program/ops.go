package program

import (
	"fmt"
	"math"
)

// OpSetVersion versions the op set below. A program whose ops need a newer op set is rejected.
const OpSetVersion = 3

// OpKind names an operation. Every activation is float32, row-major [rows, width]; "rows"
// is the method's step S unless an op says otherwise. The executor knows, for each step,
// the absolute position pos of row 0 (from position_ids) and the number n of real rows
// (from attention_mask); ops use them where stated.
type OpKind string

// The op set. In lists inputs, Out outputs, by position within the op (names are tensors:
// constants, method I/O or activations).
const (
	// OpEmbed: In [ids i64[1,S] (or [B,S] in hf_encode methods), table [V,D] any weight
	// dtype] → Out [x [S,D]]. x[i] = table[ids[i]] * Attr.Scale. ids is input_ids, or
	// token_type_ids (op set 3).
	OpEmbed OpKind = "embed"
	// OpRMSNorm: In [x [R,W], weight f32[Attr.Width] (optional)] → Out [y [R,W]] (may be x).
	// Each consecutive group of Attr.Width values is normalized: g / sqrt(mean(g²)+Attr.Eps) * weight.
	// Width = W normalizes whole rows; Width = head_dim normalizes each head.
	OpRMSNorm OpKind = "rms_norm"
	// OpLinear: In [x [R,K], W [N,K] any weight dtype, bias f32[N] (optional)] → Out [y [R',N]].
	// If Attr.LastRow, only the last real row (n-1) is computed and R' = 1; otherwise R' = R.
	OpLinear OpKind = "linear"
	// OpRoPE: In [x [S,H*Attr.HeadDim], position_ids i64[1,S], cos f32[C,D/2], sin f32[C,D/2]]
	// → Out [x] (in place). Rotate-half rotation of the first D = 2*len(cos row) dims of each
	// head, with the table row of each row's position. Op set 3: without position_ids (three
	// inputs) the rows' positions are implicit: in an hf_encode method, a token's index in
	// its sequence.
	OpRoPE OpKind = "rope"
	// OpAttention: In [q [S,Hq*Dk], k [S,Hkv*Dk], v [S,Hkv*Dv], k_cache [1,Hkv,L,Dk],
	// v_cache [1,Hkv,L,Dv], attention_mask bool[1,1,S,C]] → Out [o [S,Hq*Dv]].
	// Row i attends to the incoming cache (absolute positions a < pos held in slot a mod L)
	// and current rows 0..i, as allowed by the mask and, if Attr.Window > 0, a > pos+i-Window.
	// Scores are scaled by Attr.Scale and soft-capped by Attr.SoftCap when > 0.
	OpAttention OpKind = "attention"
	// OpCacheWrite: In [x [S,H*D], cache [1,H,L,D]] → Out [cache]. Real rows only:
	// row i goes to slot (pos+i) mod L; when n > L only the last L rows are written.
	OpCacheWrite OpKind = "cache_write"
	// OpAdvance: In [counter i64 scalar] → Out [counter]: counter += n.
	OpAdvance OpKind = "advance"
	// OpAdd: In [a, b] same shape → Out [y] (may alias a or b).
	OpAdd OpKind = "add"
	// OpGLU: In [gate [R,F], up [R,F]] → Out [y [R,F]]: act(gate) * up,
	// Attr.Activation "silu" or "gelu_tanh".
	OpGLU OpKind = "glu"
	// OpSoftCap: In [x] → Out [x]: Attr.SoftCap * tanh(x / Attr.SoftCap).
	OpSoftCap OpKind = "soft_cap"
	// OpScale: In [x] → Out [x]: x * Attr.Scale (op set 2; Granite's residual and logits
	// multipliers).
	OpScale OpKind = "scale"
	// OpMoE (op set 2): In [x [R,D], router f32[E,D], gate_0..gate_{E-1} [F,D],
	// up_0..up_{E-1} [F,D], down_0..down_{E-1} [D,F]] → Out [y [R,D]] (not x).
	// Per row: p = softmax(router·x) over the E experts; the Attr.TopK largest p
	// (ties: lower expert first), divided by their sum when Attr.NormTopK; then
	// y = Σ over the chosen experts, in expert order, of p_e · down_e(act(gate_e·x) · up_e·x),
	// Attr.Activation "silu" or "gelu_tanh". A mixture-of-experts feed-forward layer.
	OpMoE OpKind = "moe"

	// Op set 3: encoders (hf_encode methods: several independent sequences per step, no
	// caches; docs/contract.md, "The hf_encode v1 contract").

	// OpLayerNorm: In [x [R,W], weight f32[Attr.Width], bias f32[Attr.Width]] → Out [y [R,W]]
	// (may be x). Each group g of Attr.Width values: (g - mean(g)) / sqrt(var(g) + Attr.Eps)
	// * weight + bias, var the biased variance (BERT's LayerNorm).
	OpLayerNorm OpKind = "layer_norm"
	// OpActivation: In [x [R,W]] → Out [y [R,W]] (may be x): y = act(x) element-wise,
	// Attr.Activation "gelu" (erf), "gelu_tanh", "silu", "tanh" or "relu".
	OpActivation OpKind = "activation"
	// OpPositionEmbed: In [x [R,D], table [P,D] any weight dtype] → Out [x] (in place):
	// x[i] += table[p(i)], p(i) the row's position (position_ids in hf_static methods, the
	// index in its sequence in hf_encode methods). Absolute position embeddings.
	OpPositionEmbed OpKind = "position_embed"
	// OpSelfAttention: In [q [R,Hq*Dk], k [R,Hkv*Dk], v [R,Hkv*Dv], attention_mask bool[B,S]]
	// → Out [o [R,Hq*Dv]]. Row i of a sequence attends to the real rows of the same sequence
	// (all of them; with Attr.Causal, rows 0..i), scores scaled by Attr.Scale; no cache.
	OpSelfAttention OpKind = "self_attention"
	// OpPool: In [x [B*S,D], attention_mask bool[B,S]] → Out [y [B,D]]: one row per sequence
	// from its real rows: Attr.Pooling "cls" (the first), "mean", "max" (per column) or
	// "last" (the last real row).
	OpPool OpKind = "pool"
	// OpL2Normalize: In [x [R,W]] → Out [y [R,W]] (may be x): y = x / max(‖x‖₂, Attr.Eps),
	// row by row.
	OpL2Normalize OpKind = "l2_normalize"
)

// Activation functions of OpGLU (silu, gelu_tanh) and OpActivation (all).
const (
	ActSiLU     = "silu"
	ActGELUTanh = "gelu_tanh"
	ActGELU     = "gelu" // exact: ½·x·(1 + erf(x/√2)); op set 3
	ActTanh     = "tanh" // op set 3
	ActReLU     = "relu" // op set 3
)

// Pooling modes of OpPool.
const (
	PoolCLS  = "cls"
	PoolMean = "mean"
	PoolMax  = "max"
	PoolLast = "last"
)

// Op is one operation of a method.
type Op struct {
	Kind OpKind   `json:"op"`
	In   []string `json:"in"`
	Out  []string `json:"out"`
	Attr Attr     `json:"attr,omitzero"`
}

// Attr holds the attributes of all op kinds; each kind reads the fields its doc names.
type Attr struct {
	Scale      float32 `json:"scale,omitempty"`
	Eps        float32 `json:"eps,omitempty"`
	Width      int     `json:"width,omitempty"`
	LastRow    bool    `json:"last_row,omitempty"`
	HeadDim    int     `json:"head_dim,omitempty"`
	Heads      int     `json:"heads,omitempty"`
	KVHeads    int     `json:"kv_heads,omitempty"`
	VHeadDim   int     `json:"v_head_dim,omitempty"`
	Window     int     `json:"window,omitempty"`
	SoftCap    float32 `json:"soft_cap,omitempty"`
	Activation string  `json:"activation,omitempty"`
	TopK       int     `json:"top_k,omitempty"`
	NormTopK   bool    `json:"norm_top_k,omitempty"`
	Causal     bool    `json:"causal,omitempty"`
	Pooling    string  `json:"pooling,omitempty"`
}

// arity gives the allowed input counts and the output count of each kind.
var arity = map[OpKind]struct{ minIn, maxIn, out int }{
	OpEmbed:      {2, 2, 1},
	OpRMSNorm:    {1, 2, 1},
	OpLinear:     {2, 3, 1},
	OpRoPE:       {3, 4, 1},
	OpAttention:  {6, 6, 1},
	OpCacheWrite: {2, 2, 1},
	OpAdvance:    {1, 1, 1},
	OpAdd:        {2, 2, 1},
	OpGLU:        {2, 2, 1},
	OpSoftCap:    {1, 1, 1},
	OpScale:      {1, 1, 1},
	OpMoE:        {5, 2 + 3*MaxExperts, 1},

	OpLayerNorm:     {3, 3, 1},
	OpActivation:    {1, 1, 1},
	OpPositionEmbed: {2, 2, 1},
	OpSelfAttention: {4, 4, 1},
	OpPool:          {2, 2, 1},
	OpL2Normalize:   {1, 1, 1},
}

// MaxExperts bounds the experts of one OpMoE.
const MaxExperts = 1024

// checkArity validates an op's kind, arity and required attributes.
func (op *Op) check() error {
	a, ok := arity[op.Kind]
	if !ok {
		return fmt.Errorf("unknown op kind %q (op set version %d)", op.Kind, OpSetVersion)
	}
	if len(op.In) < a.minIn || len(op.In) > a.maxIn {
		return fmt.Errorf("%s takes %d..%d inputs, has %d", op.Kind, a.minIn, a.maxIn, len(op.In))
	}
	if len(op.Out) != a.out {
		return fmt.Errorf("%s has %d outputs, has %d", op.Kind, a.out, len(op.Out))
	}
	switch op.Kind {
	case OpRMSNorm:
		if op.Attr.Width <= 0 || op.Attr.Eps <= 0 {
			return fmt.Errorf("rms_norm needs width > 0 and eps > 0")
		}
	case OpRoPE:
		if op.Attr.HeadDim <= 0 {
			return fmt.Errorf("rope needs head_dim > 0")
		}
	case OpAttention:
		at := op.Attr
		if at.Heads <= 0 || at.KVHeads <= 0 || at.HeadDim <= 0 || at.VHeadDim <= 0 || at.Scale <= 0 {
			return fmt.Errorf("attention needs heads, kv_heads, head_dim, v_head_dim and scale > 0")
		}
		if at.Heads%at.KVHeads != 0 {
			return fmt.Errorf("attention heads %d not a multiple of kv_heads %d", at.Heads, at.KVHeads)
		}
		if at.Window < 0 || at.SoftCap < 0 {
			return fmt.Errorf("attention window and soft_cap must be ≥ 0")
		}
	case OpGLU:
		if op.Attr.Activation != ActSiLU && op.Attr.Activation != ActGELUTanh {
			return fmt.Errorf("glu activation %q is not %q or %q", op.Attr.Activation, ActSiLU, ActGELUTanh)
		}
	case OpSoftCap:
		if op.Attr.SoftCap <= 0 {
			return fmt.Errorf("soft_cap needs soft_cap > 0")
		}
	case OpMoE:
		experts := (len(op.In) - 2) / 3
		if (len(op.In)-2)%3 != 0 {
			return fmt.Errorf("moe takes x, router and three weights per expert, has %d inputs", len(op.In))
		}
		if op.Attr.TopK < 1 || op.Attr.TopK > experts {
			return fmt.Errorf("moe top_k = %d, must be in [1, %d] (the experts)", op.Attr.TopK, experts)
		}
		if op.Attr.Activation != ActSiLU && op.Attr.Activation != ActGELUTanh {
			return fmt.Errorf("moe activation %q is not %q or %q", op.Attr.Activation, ActSiLU, ActGELUTanh)
		}
		if op.Out[0] == op.In[0] {
			return fmt.Errorf("moe writes y into a buffer other than its input x %q", op.In[0])
		}
	case OpScale:
		if op.Attr.Scale == 0 || math.IsNaN(float64(op.Attr.Scale)) || math.IsInf(float64(op.Attr.Scale), 0) {
			return fmt.Errorf("scale needs a finite, non-zero scale")
		}
	case OpEmbed:
		if op.Attr.Scale == 0 {
			return fmt.Errorf("embed needs a non-zero scale (1 for none)")
		}
	case OpLayerNorm:
		if op.Attr.Width <= 0 || op.Attr.Eps <= 0 {
			return fmt.Errorf("layer_norm needs width > 0 and eps > 0")
		}
	case OpActivation:
		switch op.Attr.Activation {
		case ActGELU, ActGELUTanh, ActSiLU, ActTanh, ActReLU:
		default:
			return fmt.Errorf("activation %q is not gelu, gelu_tanh, silu, tanh or relu", op.Attr.Activation)
		}
	case OpSelfAttention:
		at := op.Attr
		if at.Heads <= 0 || at.KVHeads <= 0 || at.HeadDim <= 0 || at.VHeadDim <= 0 || at.Scale <= 0 {
			return fmt.Errorf("self_attention needs heads, kv_heads, head_dim, v_head_dim and scale > 0")
		}
		if at.Heads%at.KVHeads != 0 {
			return fmt.Errorf("self_attention heads %d not a multiple of kv_heads %d", at.Heads, at.KVHeads)
		}
	case OpPool:
		switch op.Attr.Pooling {
		case PoolCLS, PoolMean, PoolMax, PoolLast:
		default:
			return fmt.Errorf("pool pooling %q is not cls, mean, max or last", op.Attr.Pooling)
		}
		if op.Out[0] == op.In[0] {
			return fmt.Errorf("pool writes y into a buffer other than its input x %q", op.In[0])
		}
	case OpL2Normalize:
		if op.Attr.Eps <= 0 {
			return fmt.Errorf("l2_normalize needs eps > 0")
		}
	}
	return nil
}
