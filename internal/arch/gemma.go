package arch

import "github.com/hfstatic/hfstatic/internal/arch/gemma"

type namedArch struct {
	name string
	arch Architecture
}

// gemmaVariants lists the Gemma family (Gemma 2, Gemma 3 text).
func gemmaVariants() []namedArch {
	out := make([]namedArch, 0, len(gemma.Variants))
	for _, v := range gemma.Variants {
		out = append(out, namedArch{name: v.Name, arch: v})
	}
	return out
}
