// Package arch is the one registry of supported architectures, keyed by the Hugging Face
// class name in config.json's architectures[0]. Each entry turns a raw config into a
// decoder spec; nothing here reads files or runs models.
package arch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/arch/gemma"
	"github.com/hfstatic/hfstatic/internal/arch/granite"
	"github.com/hfstatic/hfstatic/internal/arch/llama"
	"github.com/hfstatic/hfstatic/internal/arch/olmo2"
	"github.com/hfstatic/hfstatic/internal/arch/phi3"
	"github.com/hfstatic/hfstatic/internal/arch/smollm3"
)

// Architecture is one Hugging Face class of a model family: it turns a raw config.json
// into a validated decoder spec (sizes, graph switches, weight names, RoPE) and the
// model's trained context length (max_position_embeddings).
type Architecture interface {
	// Name is the Hugging Face class name, e.g. "LlamaForCausalLM".
	Name() string
	Spec(raw json.RawMessage) (*decoder.Spec, int, error)
}

// families lists every model family package's architectures: adding a family is one
// line here (see docs/adding-a-family.md).
var families = [][]Architecture{
	all(llama.Variants),
	all(gemma.Variants),
	all(olmo2.Variants),
	all(smollm3.Variants),
	all(granite.Variants),
	all(phi3.Variants),
}

func all[A Architecture](variants []A) []Architecture {
	out := make([]Architecture, len(variants))
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

var registry = build()

func build() map[string]Architecture {
	m := map[string]Architecture{}
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

// Lookup finds the architecture registered under a Hugging Face class name.
func Lookup(name string) (Architecture, error) {
	a, ok := registry[name]
	if !ok {
		return nil, &UnsupportedError{Name: name, Supported: Supported()}
	}
	return a, nil
}
