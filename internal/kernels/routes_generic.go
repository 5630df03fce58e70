//go:build purego || !(amd64 || arm64)

package kernels

// Architectures without assembly kernels, and the purego build, have one route.
var routeSpecs = []routeSpec{{"generic", nil, func() {}}}
