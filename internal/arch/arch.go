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
	"github.com/hfstatic/hfstatic/internal/arch/llama"
)

// Architecture turns a raw config.json into a validated decoder spec and the model's
// trained context length (max_position_embeddings).
type Architecture interface {
	Spec(raw json.RawMessage) (*decoder.Spec, int, error)
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
	add := func(name string, a Architecture) {
		if _, dup := m[name]; dup {
			panic("arch: duplicate registration of " + name) // programming error, caught by tests
		}
		m[name] = a
	}
	for _, v := range llama.Variants {
		add(v.Name, v)
	}
	for _, v := range gemmaVariants() {
		add(v.name, v.arch)
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
