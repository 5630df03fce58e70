// Package program owns the hfstatic program file: its typed manifest (contract metadata,
// tensor table, per-method op lists with fixed shapes), its op set, and encoding, decoding
// and structural validation of the file.
//
// It does not know Hugging Face checkpoints, compute kernels or runner policy. Whether a
// program's metadata satisfies a particular I/O contract is decided by the runner's contract
// registry; this package defines the hf_static v1 contract's names and method I/O
// (contract.go) for the exporter, the graph builder and that registry to share. It
// guarantees only that a decoded program is self-consistent: every tensor lies inside the
// file with a matching checksum, every op names tensors that exist with the arity its kind
// requires.
package program

import (
	"fmt"
)

// DType is the element type of a tensor in a program.
type DType string

// Element types. Q8 and Q4 are block-quantized weight formats whose byte layout is
// defined by the executor's kernels; their Size is recorded per tensor.
const (
	F32  DType = "f32"
	F16  DType = "f16"
	BF16 DType = "bf16"
	Q8   DType = "q8"
	Q4   DType = "q4"
	I64  DType = "i64"
	Bool DType = "bool"
)

// ElemBytes is the size of one element for plain dtypes and 0 for block-quantized ones.
func (d DType) ElemBytes() int {
	switch d {
	case F32:
		return 4
	case F16, BF16:
		return 2
	case I64:
		return 8
	case Bool:
		return 1
	}
	return 0
}

// Quantized reports whether d is a block-quantized weight format.
func (d DType) Quantized() bool { return d == Q8 || d == Q4 }

func (d DType) valid() bool { return d.ElemBytes() > 0 || d.Quantized() }

// Shape is a tensor shape, outermost dimension first.
type Shape []int

// Elems is the product of the dimensions.
func (s Shape) Elems() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

func (s Shape) String() string { return fmt.Sprint([]int(s)) }

// Equal reports whether two shapes are identical.
func (s Shape) Equal(t Shape) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// Manifest is the typed table of contents of a program file.
type Manifest struct {
	Metadata Metadata `json:"metadata"`
	// Tensors are the constant tensors (weights, tables) stored in the file, shared by all methods.
	Tensors []Tensor `json:"tensors"`
	// Assets are opaque named blobs carried along (tokenizer.json, tokenizer_config.json).
	Assets  []Asset  `json:"assets,omitempty"`
	Methods []Method `json:"methods"`
}

// Tensor is a constant tensor stored in the data section.
type Tensor struct {
	Name  string `json:"name"`
	DType DType  `json:"dtype"`
	Shape Shape  `json:"shape"`
	// Offset is relative to the start of the file and a multiple of Alignment.
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// Asset is an opaque blob stored in the data section.
type Asset struct {
	Name   string `json:"name"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// Method is one fixed-shape entry point (decode, prefill).
type Method struct {
	Name string `json:"name"`
	// Step is the number of token rows the method processes per call (1 for decode; B·S
	// for an hf_encode method of B sequences of S tokens).
	Step int `json:"step"`
	// Logits says which rows the logits output holds; "" for methods without logits
	// (hf_encode).
	Logits LogitsRows `json:"logits,omitempty"`
	// Inputs and Outputs are bound by name. An output with the same name as an input is
	// the same buffer, mutated in place.
	Inputs  []IO `json:"inputs"`
	Outputs []IO `json:"outputs"`
	// Activations are scratch buffers (float32) planned at load time.
	Activations []IO `json:"activations"`
	Ops         []Op `json:"ops"`
}

// IO describes a named buffer: a method input, output or activation.
type IO struct {
	Name  string `json:"name"`
	DType DType  `json:"dtype"`
	Shape Shape  `json:"shape"`
}

// Bytes is the buffer size in bytes.
func (b IO) Bytes() int { return b.Shape.Elems() * b.DType.ElemBytes() }

// LogitsRows says whether a method returns logits for every row or only the last real one.
type LogitsRows string

// Logits row modes.
const (
	LogitsAll  LogitsRows = "all"  // [1, S, V]
	LogitsLast LogitsRows = "last" // [1, 1, V]: the last real row
)

// Metadata is the contract metadata of a program (docs/contract.md "Metadata").
// The caches' fields (CacheDType, SlidingLayout, Layers) are hf_static's; an hf_encode
// program has none and has Encoder instead.
type Metadata struct {
	Contract      string        `json:"contract"`
	Version       int           `json:"version"`
	MaxContext    int           `json:"max_context"`
	VocabSize     int           `json:"vocab_size"`
	CacheDType    DType         `json:"cache_dtype,omitempty"`
	SlidingWindow int           `json:"sliding_window,omitempty"`
	SlidingLayout SlidingLayout `json:"sliding_layout,omitempty"`
	Layers        []Layer       `json:"layers,omitempty"`
	Tokens        Tokens        `json:"tokens"`
	Source        Source        `json:"source"`
	// Encoder describes an hf_encode program's method and outputs; nil in hf_static ones.
	Encoder *Encoder `json:"encoder,omitempty"`
}

// SlidingLayout says how sliding-window layers store their cache.
type SlidingLayout string

// Sliding layouts.
const (
	// LayoutRing: absolute position a lives in slot a mod L, L = min(W, C).
	LayoutRing SlidingLayout = "ring"
	// LayoutFull: sliding layers keep a full-length cache; the window is applied by masking.
	LayoutFull SlidingLayout = "full"
)

// LayerType is a decoder layer's attention kind.
type LayerType string

// Layer types.
const (
	LayerFull    LayerType = "full"
	LayerSliding LayerType = "sliding"
)

// Layer describes one decoder layer's cache.
type Layer struct {
	Type     LayerType `json:"type"`
	KVHeads  int       `json:"kv_heads"`
	KHeadDim int       `json:"k_head_dim"`
	VHeadDim int       `json:"v_head_dim"`
	// CacheRows is L_l: C for full layers, min(W, C) for ring-layout sliding layers.
	CacheRows int `json:"cache_rows"`
}

// Tokens holds the special token ids from the checkpoint's configs.
type Tokens struct {
	BOS *int64  `json:"bos,omitempty"`
	EOS []int64 `json:"eos"`
	Pad int64   `json:"pad"`
}

// EOSIDs returns the end-of-sequence ids as ints.
func (t Tokens) EOSIDs() []int {
	out := make([]int, len(t.EOS))
	for i, e := range t.EOS {
		out[i] = int(e)
	}
	return out
}

// Source records where a program came from, for inspection.
type Source struct {
	Architecture string `json:"architecture"`
	// Checkpoint fingerprints the checkpoint's config and tensor table.
	Checkpoint string `json:"checkpoint"`
	Exporter   string `json:"exporter"`
	Weights    string `json:"weights"`
	// Model names what was exported: the Hugging Face folder's name or ORG/NAME[@REVISION].
	// Empty in programs written before it was recorded.
	Model string `json:"model,omitempty"`
	// Writer is the hfstatic version that wrote the program (hfstatic.Version). Empty in
	// programs written before it was recorded.
	Writer string `json:"writer,omitempty"`
}

// Method returns the method with the given name.
func (m *Manifest) Method(name string) (*Method, bool) {
	for i := range m.Methods {
		if m.Methods[i].Name == name {
			return &m.Methods[i], true
		}
	}
	return nil, false
}

// Tensor returns the constant tensor with the given name.
func (m *Manifest) Tensor(name string) (*Tensor, bool) {
	for i := range m.Tensors {
		if m.Tensors[i].Name == name {
			return &m.Tensors[i], true
		}
	}
	return nil, false
}

// Input returns the method input with the given name.
func (m *Method) Input(name string) (IO, bool) { return findIO(m.Inputs, name) }

// Output returns the method output with the given name.
func (m *Method) Output(name string) (IO, bool) { return findIO(m.Outputs, name) }

func findIO(list []IO, name string) (IO, bool) {
	for _, b := range list {
		if b.Name == name {
			return b, true
		}
	}
	return IO{}, false
}
