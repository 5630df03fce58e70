package hf

import (
	"errors"
	"fmt"
)

// Sentinel errors; test with errors.Is. They are wrapped in *FileError or
// *TensorError, which name the file and tensor.
var (
	// ErrNoWeights: the folder has neither model.safetensors nor
	// model.safetensors.index.json.
	ErrNoWeights = errors.New("no model.safetensors or model.safetensors.index.json (only safetensors checkpoints are supported; convert .bin/.pt weights first)")
	// ErrTensorNotFound: no tensor of that name in the checkpoint.
	ErrTensorNotFound = errors.New("tensor not found in the checkpoint")
	// ErrNotInShard: the index maps a tensor to a shard that does not contain it.
	ErrNotInShard = errors.New("listed in model.safetensors.index.json but absent from its shard")
)

// FileError is a problem with one file of the checkpoint folder. A missing
// required file also matches errors.Is(err, fs.ErrNotExist).
type FileError struct {
	File string // path inside the checkpoint folder, e.g. "model-00002-of-00003.safetensors"
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("hf: %s: %v", e.File, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// TensorError is a problem with one tensor.
type TensorError struct {
	Tensor string
	File   string // the shard holding (or expected to hold) it; empty if unknown
	Err    error
}

func (e *TensorError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("hf: tensor %q: %v", e.Tensor, e.Err)
	}
	return fmt.Sprintf("hf: tensor %q in %s: %v", e.Tensor, e.File, e.Err)
}
func (e *TensorError) Unwrap() error { return e.Err }
