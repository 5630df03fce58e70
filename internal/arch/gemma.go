package arch

type namedArch struct {
	name string
	arch Architecture
}

// gemmaVariants lists the Gemma family (added with sliding-window support).
func gemmaVariants() []namedArch { return nil }
