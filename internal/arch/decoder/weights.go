package decoder

import (
	"fmt"
	"maps"

	"github.com/hfstatic/hfstatic/program"
)

// Role is a weight's function in the graph.
type Role string

// Model-wide roles.
const (
	Embed     Role = "embed"      // [vocab, hidden]
	FinalNorm Role = "final_norm" // [hidden]
	LMHead    Role = "lm_head"    // [vocab, hidden]; absent when tied
)

// Per-layer roles, with the shape each weight has (q = heads*head_dim, kv =
// kv_heads*head_dim; matrices are [out, in]).
const (
	AttnNorm     Role = "attn_norm"      // [hidden]
	Q            Role = "q"              // [q, hidden]
	K            Role = "k"              // [kv, hidden]
	V            Role = "v"              // [kv, hidden]
	O            Role = "o"              // [hidden, q]
	QBias        Role = "q_bias"         // [q]
	KBias        Role = "k_bias"         // [kv]
	VBias        Role = "v_bias"         // [kv]
	OBias        Role = "o_bias"         // [hidden]
	QNorm        Role = "q_norm"         // [head_dim], or [q] with QKNormWhole
	KNorm        Role = "k_norm"         // [head_dim], or [kv] with QKNormWhole
	PostAttnNorm Role = "post_attn_norm" // [hidden]
	FFNNorm      Role = "ffn_norm"       // [hidden]
	Gate         Role = "gate"           // [ffn, hidden]
	Up           Role = "up"             // [ffn, hidden]
	Down         Role = "down"           // [hidden, ffn]
	GateBias     Role = "gate_bias"      // [ffn]
	UpBias       Role = "up_bias"        // [ffn]
	DownBias     Role = "down_bias"      // [hidden]
	PostFFNNorm  Role = "post_ffn_norm"  // [hidden]
	// Fused checkpoint matrices (Spec.FusedQKV, FusedGateUp), cut into the roles above at
	// export: the graph never reads them.
	QKV    Role = "qkv"     // [q+2*kv, hidden]: Q, K, V rows in that order
	GateUp Role = "gate_up" // [2*ffn, hidden]: Gate, Up rows in that order
)

// Shape is the shape of a weight of role r under the spec.
func (s *Spec) Shape(r Role) program.Shape {
	D, qw, kvw := s.Hidden, s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	switch r {
	case Embed, LMHead:
		return program.Shape{s.Vocab, D}
	case FinalNorm, AttnNorm, FFNNorm, PostAttnNorm, PostFFNNorm, OBias, DownBias:
		return program.Shape{D}
	case QNorm:
		if s.QKNormWhole {
			return program.Shape{qw}
		}
		return program.Shape{s.HeadDim}
	case KNorm:
		if s.QKNormWhole {
			return program.Shape{kvw}
		}
		return program.Shape{s.HeadDim}
	case Q:
		return program.Shape{qw, D}
	case K, V:
		return program.Shape{kvw, D}
	case O:
		return program.Shape{D, qw}
	case QBias:
		return program.Shape{qw}
	case KBias, VBias:
		return program.Shape{kvw}
	case Gate, Up:
		return program.Shape{s.FFN, D}
	case Down:
		return program.Shape{D, s.FFN}
	case GateBias, UpBias:
		return program.Shape{s.FFN}
	case QKV:
		return program.Shape{qw + 2*kvw, D}
	case GateUp:
		return program.Shape{2 * s.FFN, D}
	case Router, ExpertGate, ExpertUp, ExpertDown:
		return s.moeShape(r)
	}
	return nil
}

// parts lists the roles a fused role is cut into, in row order (nil for other roles).
func parts(r Role) []Role {
	switch r {
	case QKV:
		return []Role{Q, K, V}
	case GateUp:
		return []Role{Gate, Up}
	}
	return nil
}

// Names maps graph roles to checkpoint tensor names: a family's naming scheme.
type Names struct {
	Embed, FinalNorm, LMHead string
	Layer                    func(l int, r Role) string
	// Expert names expert e's ExpertGate, ExpertUp or ExpertDown in layer l (mixture-of-
	// experts families only).
	Expert func(l, e int, r Role) string
}

// transformersLayerNames are the names transformers gives a decoder layer's weights in
// most families, after "model.layers.N.".
var transformersLayerNames = map[Role]string{
	AttnNorm: "input_layernorm.weight",
	FFNNorm:  "post_attention_layernorm.weight",
	Q:        "self_attn.q_proj.weight", K: "self_attn.k_proj.weight", V: "self_attn.v_proj.weight", O: "self_attn.o_proj.weight",
	QBias: "self_attn.q_proj.bias", KBias: "self_attn.k_proj.bias", VBias: "self_attn.v_proj.bias", OBias: "self_attn.o_proj.bias",
	QNorm: "self_attn.q_norm.weight", KNorm: "self_attn.k_norm.weight",
	Gate: "mlp.gate_proj.weight", Up: "mlp.up_proj.weight", Down: "mlp.down_proj.weight",
	GateBias: "mlp.gate_proj.bias", UpBias: "mlp.up_proj.bias", DownBias: "mlp.down_proj.bias",
}

// TransformersNames returns the weight names transformers gives most decoder-only
// models (model.embed_tokens, model.layers.N.self_attn.q_proj, mlp.gate_proj,
// model.norm, lm_head), with a family's own names for some layer roles (the part after
// "model.layers.N."; the norms differ most between families).
func TransformersNames(layer map[Role]string) Names {
	names := maps.Clone(transformersLayerNames)
	maps.Copy(names, layer)
	return Names{
		Embed:     "model.embed_tokens.weight",
		FinalNorm: "model.norm.weight",
		LMHead:    "lm_head.weight",
		Layer: func(l int, r Role) string {
			n, ok := names[r]
			if !ok {
				n = string(r)
			}
			return fmt.Sprintf("model.layers.%d.", l) + n
		},
	}
}

// IsNorm reports whether a role is an RMSNorm weight (exported as f32, with NormOffset added).
func IsNorm(r Role) bool {
	switch r {
	case FinalNorm, AttnNorm, QNorm, KNorm, PostAttnNorm, FFNNorm, PostFFNNorm:
		return true
	}
	return false
}

// IsBias reports whether a role is a bias (exported as f32).
func IsBias(r Role) bool {
	switch r {
	case QBias, KBias, VBias, OBias, GateBias, UpBias, DownBias:
		return true
	}
	return false
}

// LayerRoles lists the checkpoint weights of every layer, in a stable order (a fused role in
// place of the roles it holds; a sparse layer has the mixture's instead of the dense MLP's:
// LayerWeights).
func (s *Spec) LayerRoles() []Role {
	var roles []Role
	if !s.NoPreNorms {
		roles = append(roles, AttnNorm)
	}
	if s.FusedQKV {
		roles = append(roles, QKV, O)
	} else {
		roles = append(roles, Q, K, V, O)
	}
	if s.QKVBias {
		roles = append(roles, QBias, KBias, VBias)
	}
	if s.OBias {
		roles = append(roles, OBias)
	}
	if s.QKNorm {
		roles = append(roles, QNorm, KNorm)
	}
	if s.SandwichNorms {
		roles = append(roles, PostAttnNorm)
	}
	if !s.NoPreNorms {
		roles = append(roles, FFNNorm)
	}
	if s.FusedGateUp {
		roles = append(roles, GateUp, Down)
	} else {
		roles = append(roles, Gate, Up, Down)
	}
	if s.MLPBias {
		roles = append(roles, GateBias, UpBias, DownBias)
	}
	if s.SandwichNorms {
		roles = append(roles, PostFFNNorm)
	}
	return roles
}

// Weight is one checkpoint tensor the graph reads.
type Weight struct {
	Name  string // the checkpoint's (and the program's) tensor name
	Role  Role
	Layer int // -1 for the model-wide roles
	Shape program.Shape
	// Parts are the program tensors cut from a fused matrix's rows, in row order (Q, K, V
	// of a QKV); nil when the tensor goes into the program as it is.
	Parts []Weight
}

// Weights lists every checkpoint tensor the spec's graph reads, with its shape, in program
// order: the embedding, each layer's LayerRoles, the final norm and, when untied, the output
// projection. The exporter and the synthetic checkpoints both derive from this list.
func (s *Spec) Weights() []Weight {
	w := []Weight{{Name: s.Names.Embed, Role: Embed, Layer: -1, Shape: s.Shape(Embed)}}
	for l := range s.Layers {
		w = append(w, s.LayerWeights(l)...)
	}
	w = append(w, Weight{Name: s.Names.FinalNorm, Role: FinalNorm, Layer: -1, Shape: s.Shape(FinalNorm)})
	if !s.Tied {
		w = append(w, Weight{Name: s.Names.LMHead, Role: LMHead, Layer: -1, Shape: s.Shape(LMHead)})
	}
	return w
}

// OutputName is the tensor the logits projection reads.
func (s *Spec) OutputName() string {
	if s.Tied {
		return s.Names.Embed
	}
	return s.Names.LMHead
}
