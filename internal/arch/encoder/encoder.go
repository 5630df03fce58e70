// Package encoder builds the encode method of an encoder-only transformer (BERT,
// XLM-RoBERTa, RoBERTa: bidirectional attention, absolute position embeddings, token types,
// post-norm layers with LayerNorm and biases) from a validated, architecture-neutral Spec:
// the family packages (internal/arch/bert, internal/arch/xlmroberta) translate their
// Hugging Face config into a Spec, this package turns it into program ops and weight names.
// It knows nothing about files, kernels or runner policy.
package encoder

import (
	"fmt"
	"strings"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/program"
)

// Spec is everything the graph depends on; Validate names the first bad field.
type Spec struct {
	Hidden, Layers, Heads, HeadDim, FFN, Vocab int
	// Positions is the number of rows of the checkpoint's position table, and PositionOffset
	// the row of position 0 (XLM-RoBERTa's padding_idx + 1; 0 for BERT): sequences hold at
	// most MaxTokens() = Positions - PositionOffset tokens.
	Positions, PositionOffset int
	// TokenTypes is the number of rows of the token type table (BERT 2, XLM-RoBERTa 1).
	TokenTypes int
	NormEps    float32
	// Activation of the feed-forward layer: program.ActGELU, ActGELUTanh, ActReLU or ActSiLU.
	Activation string
	// Names maps roles to checkpoint tensor names (without a base model prefix: Layouts).
	Names Names
	// Layouts are where checkpoints may keep the base model's tensors: as they are
	// (BertModel saved by sentence-transformers) or under a prefix ("bert." in
	// BertForSequenceClassification); the exporter reads through the first layout under
	// which the checkpoint has the word embeddings.
	Layouts []decoder.Layout
	// Classifier, if set, is the sequence classification head of a ForSequenceClassification
	// class (a cross-encoder).
	Classifier *Classifier
}

// Classifier is a sequence classification head: a dense layer with tanh on the first token
// (BERT's pooler, RoBERTa's classifier.dense), then the output projection to Labels scores.
type Classifier struct {
	Labels                         int
	Dense, DenseBias, Out, OutBias string // checkpoint tensor names (not under a layout)
}

// MaxTokens is the longest sequence the position table covers.
func (s *Spec) MaxTokens() int { return s.Positions - s.PositionOffset }

// Validate checks the spec's invariants.
func (s *Spec) Validate() error {
	for _, p := range []struct {
		name string
		v    int
	}{{"hidden", s.Hidden}, {"layers", s.Layers}, {"heads", s.Heads}, {"head_dim", s.HeadDim}, {"ffn", s.FFN},
		{"vocab", s.Vocab}, {"token types", s.TokenTypes}, {"positions", s.MaxTokens()}} {
		if p.v <= 0 {
			return fmt.Errorf("encoder spec: %s = %d, must be > 0", p.name, p.v)
		}
	}
	if s.Heads*s.HeadDim != s.Hidden {
		return fmt.Errorf("encoder spec: %d heads × %d ≠ hidden %d", s.Heads, s.HeadDim, s.Hidden)
	}
	if s.PositionOffset < 0 || s.NormEps <= 0 {
		return fmt.Errorf("encoder spec: position offset %d and norm eps %g must be ≥ 0 and > 0", s.PositionOffset, s.NormEps)
	}
	switch s.Activation {
	case program.ActGELU, program.ActGELUTanh, program.ActReLU, program.ActSiLU:
	default:
		return fmt.Errorf("encoder spec: activation %q unsupported", s.Activation)
	}
	if s.Names.Layer == nil {
		return fmt.Errorf("encoder spec: no tensor names")
	}
	if c := s.Classifier; c != nil && (c.Labels < 1 || c.Dense == "" || c.Out == "") {
		return fmt.Errorf("encoder spec: classifier of %d labels without its names", c.Labels)
	}
	return nil
}

// Describe is a one-line summary for logs.
func (s *Spec) Describe() string {
	d := fmt.Sprintf("encoder: %d layers, hidden %d, %d heads × %d, ffn %d, vocab %d, %d positions, %d token types",
		s.Layers, s.Hidden, s.Heads, s.HeadDim, s.FFN, s.Vocab, s.MaxTokens(), s.TokenTypes)
	if s.Classifier != nil {
		d += fmt.Sprintf(", classifier of %d labels", s.Classifier.Labels)
	}
	return d
}

// Role is a weight's function in the graph.
type Role string

// Model-wide roles, with their shapes (D = hidden).
const (
	Embed         Role = "embed"           // [vocab, D]
	Position      Role = "position"        // [positions, D]
	TokenType     Role = "token_type"      // [token types, D]
	EmbedNorm     Role = "embed_norm"      // [D]
	EmbedNormBias Role = "embed_norm_bias" // [D]
)

// Per-layer roles: matrices [out, in], biases and LayerNorm weights [out].
const (
	Q            Role = "q"
	QBias        Role = "q_bias"
	K            Role = "k"
	KBias        Role = "k_bias"
	V            Role = "v"
	VBias        Role = "v_bias"
	O            Role = "o"
	OBias        Role = "o_bias"
	AttnNorm     Role = "attn_norm"
	AttnNormBias Role = "attn_norm_bias"
	Up           Role = "up" // [ffn, D]
	UpBias       Role = "up_bias"
	Down         Role = "down" // [D, ffn]
	DownBias     Role = "down_bias"
	FFNNorm      Role = "ffn_norm"
	FFNNormBias  Role = "ffn_norm_bias"
)

// Classifier roles.
const (
	ClassDense     Role = "class_dense"      // [D, D]
	ClassDenseBias Role = "class_dense_bias" // [D]
	ClassOut       Role = "class_out"        // [labels, D]
	ClassOutBias   Role = "class_out_bias"   // [labels]
)

// Kind says how the exporter stores a weight.
type Kind int

const (
	Matrix    Kind = iota // a weight matrix: the export's weight type
	Embedding             // an embedding table: the export's embedding type
	Vector                // biases and LayerNorm weights: float32
)

// Weight is one checkpoint tensor the graph reads.
type Weight struct {
	Name  string // the program's name (the checkpoint's, before a layout)
	Role  Role
	Layer int // -1 for model-wide roles
	Shape program.Shape
	Kind  Kind
	// SkipRows is how many leading rows of the checkpoint tensor the program leaves out (the
	// position table's rows before PositionOffset); the checkpoint's shape has that many more.
	SkipRows int
	// Head: the tensor is read outside the layouts (the classifier's).
	Head bool
}

// layerRoles are the roles of every layer, in program order.
var layerRoles = []Role{Q, QBias, K, KBias, V, VBias, O, OBias, AttnNorm, AttnNormBias, Up, UpBias, Down, DownBias, FFNNorm, FFNNormBias}

// Weights lists every checkpoint tensor the graph reads, in program order.
func (s *Spec) Weights() []Weight {
	D := s.Hidden
	w := []Weight{
		{Name: s.Names.Embed, Role: Embed, Layer: -1, Shape: program.Shape{s.Vocab, D}, Kind: Embedding},
		{Name: s.Names.Position, Role: Position, Layer: -1, Shape: program.Shape{s.MaxTokens(), D}, Kind: Embedding, SkipRows: s.PositionOffset},
		{Name: s.Names.TokenType, Role: TokenType, Layer: -1, Shape: program.Shape{s.TokenTypes, D}, Kind: Vector},
		{Name: s.Names.EmbedNorm, Role: EmbedNorm, Layer: -1, Shape: program.Shape{D}, Kind: Vector},
		{Name: s.Names.EmbedNormBias, Role: EmbedNormBias, Layer: -1, Shape: program.Shape{D}, Kind: Vector},
	}
	for l := range s.Layers {
		for _, r := range layerRoles {
			shape, kind := s.layerShape(r)
			w = append(w, Weight{Name: s.Names.Layer(l, r), Role: r, Layer: l, Shape: shape, Kind: kind})
		}
	}
	if c := s.Classifier; c != nil {
		w = append(w,
			Weight{Name: c.Dense, Role: ClassDense, Layer: -1, Shape: program.Shape{D, D}, Kind: Matrix, Head: true},
			Weight{Name: c.DenseBias, Role: ClassDenseBias, Layer: -1, Shape: program.Shape{D}, Kind: Vector, Head: true},
			Weight{Name: c.Out, Role: ClassOut, Layer: -1, Shape: program.Shape{c.Labels, D}, Kind: Matrix, Head: true},
			Weight{Name: c.OutBias, Role: ClassOutBias, Layer: -1, Shape: program.Shape{c.Labels}, Kind: Vector, Head: true})
	}
	return w
}

func (s *Spec) layerShape(r Role) (program.Shape, Kind) {
	D, F := s.Hidden, s.FFN
	switch r {
	case Q, K, V, O:
		return program.Shape{D, D}, Matrix
	case Up:
		return program.Shape{F, D}, Matrix
	case Down:
		return program.Shape{D, F}, Matrix
	case UpBias:
		return program.Shape{F}, Vector
	}
	return program.Shape{D}, Vector
}

// Names maps roles to checkpoint tensor names.
type Names struct {
	Embed, Position, TokenType, EmbedNorm, EmbedNormBias string
	Layer                                                func(l int, r Role) string
}

// bertLayerNames are the names transformers gives a BERT layer's weights after
// "encoder.layer.N." (RoBERTa and XLM-RoBERTa use the same).
var bertLayerNames = map[Role]string{
	Q: "attention.self.query.weight", QBias: "attention.self.query.bias",
	K: "attention.self.key.weight", KBias: "attention.self.key.bias",
	V: "attention.self.value.weight", VBias: "attention.self.value.bias",
	O: "attention.output.dense.weight", OBias: "attention.output.dense.bias",
	AttnNorm: "attention.output.LayerNorm.weight", AttnNormBias: "attention.output.LayerNorm.bias",
	Up: "intermediate.dense.weight", UpBias: "intermediate.dense.bias",
	Down: "output.dense.weight", DownBias: "output.dense.bias",
	FFNNorm: "output.LayerNorm.weight", FFNNormBias: "output.LayerNorm.bias",
}

// BERTNames are the weight names of transformers' BertModel (and RobertaModel,
// XLMRobertaModel), as a base model saves them.
var BERTNames = Names{
	Embed:         "embeddings.word_embeddings.weight",
	Position:      "embeddings.position_embeddings.weight",
	TokenType:     "embeddings.token_type_embeddings.weight",
	EmbedNorm:     "embeddings.LayerNorm.weight",
	EmbedNormBias: "embeddings.LayerNorm.bias",
	Layer: func(l int, r Role) string {
		n, ok := bertLayerNames[r]
		if !ok {
			n = string(r)
		}
		return fmt.Sprintf("encoder.layer.%d.%s", l, n)
	},
}

// BaseModel is the layout that puts the base model's tensors (embeddings., encoder.,
// pooler.) under prefix, as a task class stores them ("bert.", "roberta."); other names
// are unchanged.
func BaseModel(prefix string) decoder.Layout {
	return func(name string) string {
		for _, p := range []string{"embeddings.", "encoder.", "pooler."} {
			if strings.HasPrefix(name, p) {
				return prefix + name
			}
		}
		return name
	}
}
