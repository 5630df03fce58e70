// Package models embeds the default model shipped inside the hfstatic binary:
// karpathy's stories260K (MIT, see stories260K/LICENSE), a 260K-parameter Llama-2-style
// model of children's stories, in Hugging Face layout.
package models

import (
	"embed"
	"io/fs"
)

//go:embed stories260K
var files embed.FS

// Stories260K returns the stories260K Hugging Face folder (config.json,
// model.safetensors, tokenizer.json, …).
func Stories260K() fs.FS {
	sub, err := fs.Sub(files, "stories260K")
	if err != nil {
		panic(err) // the embedded directory name is a compile-time constant
	}
	return sub
}
