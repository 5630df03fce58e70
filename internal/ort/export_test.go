package ort

import "github.com/hfstatic/hfstatic/program"

// ReadPayloadInMemory is ReadPayload with the converted initializers kept in memory (no
// spill file), for comparison.
func ReadPayloadInMemory(f *program.File) (*Payload, error) {
	p, err := readOnnxPayload(f)
	if err != nil {
		return nil, err
	}
	return readPayload(f, p, nil)
}

// Spilled says whether p's converted initializers are in a spill file's mapping.
func Spilled(p *Payload) bool { return len(p.spill) > 0 }

// ReleasePayload unmaps p's spill file, if any.
func ReleasePayload(p *Payload) { unmap(p.spill) }

// SpillsIn says whether ReadPayload spills to a temporary directory dir.
func SpillsIn(dir string) bool { return onDisk(dir) }
