package hf

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"sort"
)

// Fingerprint identifies the checkpoint cheaply, without reading tensor
// data: "sha256:" and the hex SHA-256 of config.json, generation_config.json,
// the tokenizer files, and each shard's name, size, metadata and tensor table
// (name, dtype, shape, offsets). Two folders with the same fingerprint hold the
// same configuration and layout; identical tensor bytes are not guaranteed.
func (c *Checkpoint) Fingerprint() string {
	h := sha256.New()
	field := func(b []byte) { // length-prefixed, so fields cannot run into each other
		writeInt(h, int64(len(b)))
		h.Write(b)
	}
	field([]byte("hfstatic checkpoint fingerprint v1"))
	field(c.Config.Raw)
	field(c.GenerationConfigJSON)
	field(c.TokenizerJSON)
	field(c.TokenizerConfigJSON)
	for _, sh := range c.shards {
		field([]byte(sh.name))
		writeInt(h, sh.file.Size())
		keys := make([]string, 0, len(sh.file.Metadata))
		for k := range sh.file.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		writeInt(h, int64(len(keys)))
		for _, k := range keys {
			field([]byte(k))
			field([]byte(sh.file.Metadata[k]))
		}
		writeInt(h, int64(len(sh.file.Tensors())))
		for _, t := range sh.file.Tensors() {
			field([]byte(t.Name))
			field([]byte(t.DType.String()))
			writeInt(h, int64(len(t.Shape)))
			for _, d := range t.Shape {
				writeInt(h, int64(d))
			}
			writeInt(h, t.Offset)
			writeInt(h, t.Length)
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// writeInt writes v to a hash (whose Write never fails).
func writeInt(w io.Writer, v int64) { _ = binary.Write(w, binary.LittleEndian, v) }
