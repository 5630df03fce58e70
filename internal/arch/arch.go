// Package arch is the one registry of supported architectures, keyed by the Hugging Face
// class name in config.json's architectures[0]. Each entry turns a raw config into a
// decoder spec (causal LMs) or an encoder spec (BERT-style encoders); nothing here reads
// files or runs models.
package arch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hfstatic/hfstatic/internal/arch/bert"
	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/arch/encoder"
	"github.com/hfstatic/hfstatic/internal/arch/gemma"
	"github.com/hfstatic/hfstatic/internal/arch/granite"
	"github.com/hfstatic/hfstatic/internal/arch/llama"
	"github.com/hfstatic/hfstatic/internal/arch/olmo2"
	"github.com/hfstatic/hfstatic/internal/arch/phi3"
	"github.com/hfstatic/hfstatic/internal/arch/smollm3"
	"github.com/hfstatic/hfstatic/internal/arch/xlmroberta"
)

// Architecture is one Hugging Face class of a model family: it turns a raw config.json
// into a validated decoder spec (sizes, graph switches, weight names, RoPE) and the
// model's trained context length (max_position_embeddings).
type Architecture interface {
	// Name is the Hugging Face class name, e.g. "LlamaForCausalLM".
	Name() string
	Spec(raw json.RawMessage) (*decoder.Spec, int, error)
}

// EncoderArchitecture is one Hugging Face class of an encoder-only family (BERT,
// XLM-RoBERTa): it turns a raw config.json into a validated encoder spec, whose programs
// follow the hf_encode contract (embeddings and scores).
type EncoderArchitecture interface {
	Name() string
	EncoderSpec(raw json.RawMessage) (*encoder.Spec, error)
}

// Class is a registry entry: an Architecture or an EncoderArchitecture.
type Class interface{ Name() string }

// families lists every model family package's architectures: adding a family is one
// line here (see docs/adding-a-family.md).
var families = [][]Class{
	all(llama.Variants),
	all(gemma.Variants),
	all(olmo2.Variants),
	all(smollm3.Variants),
	all(granite.Variants),
	all(phi3.Variants),
	all(bert.Variants),
	all(xlmroberta.Variants),
}

func all[A Class](variants []A) []Class {
	out := make([]Class, len(variants))
	for i, v := range variants {
		out[i] = v
	}
	return out
}

// UnsupportedError reports an architecture with no registry entry.
type UnsupportedError struct {
	Name      string
	Supported []string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("architecture %q is not supported; supported: %s", e.Name, strings.Join(e.Supported, ", "))
}

// KindError reports a class looked up as the other kind: an encoder where a decoder was
// wanted, or the reverse.
type KindError struct {
	Name    string
	Encoder bool // the class is an encoder
}

func (e *KindError) Error() string {
	if e.Encoder {
		return fmt.Sprintf("%s is an encoder (its programs embed or score text, hf_encode), not a causal language model", e.Name)
	}
	return fmt.Sprintf("%s is a causal language model (hf_static), not an encoder", e.Name)
}

var registry = build()

func build() map[string]Class {
	m := map[string]Class{}
	for _, family := range families {
		for _, a := range family {
			if _, dup := m[a.Name()]; dup {
				panic("arch: duplicate registration of " + a.Name()) // programming error, caught by tests
			}
			m[a.Name()] = a
		}
	}
	return m
}

// Supported lists the registered class names, sorted.
func Supported() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup finds the decoder architecture registered under a Hugging Face class name (a
// *KindError for an encoder's).
func Lookup(name string) (Architecture, error) {
	c, ok := registry[name]
	if !ok {
		return nil, &UnsupportedError{Name: name, Supported: Supported()}
	}
	a, ok := c.(Architecture)
	if !ok {
		return nil, &KindError{Name: name, Encoder: true}
	}
	return a, nil
}

// LookupEncoder finds the encoder architecture registered under a Hugging Face class name
// (a *KindError for a decoder's).
func LookupEncoder(name string) (EncoderArchitecture, error) {
	c, ok := registry[name]
	if !ok {
		return nil, &UnsupportedError{Name: name, Supported: Supported()}
	}
	e, ok := c.(EncoderArchitecture)
	if !ok {
		return nil, &KindError{Name: name}
	}
	return e, nil
}

// IsEncoder reports whether name is a registered encoder class.
func IsEncoder(name string) bool {
	_, ok := registry[name].(EncoderArchitecture)
	return ok
}
