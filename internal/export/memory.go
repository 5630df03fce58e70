package export

import (
	"bytes"
	"context"
	"unsafe"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/program"
)

// ToMemory exports ckpt into memory aligned to program.Alignment, the form a program is
// loaded from without a file (the executor views tensors in place).
func ToMemory(ctx context.Context, ckpt *hf.Checkpoint, opts Options) ([]byte, *Summary, error) {
	// A program is about as large as its checkpoint: size the buffer once rather than
	// doubling it up to the size of the weights.
	size := 1<<20 + len(ckpt.TokenizerJSON) + len(ckpt.TokenizerConfigJSON)
	for _, n := range ckpt.Names() {
		t, _ := ckpt.Tensor(n)
		size += int(t.Length)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	sum, err := Export(ctx, ckpt, buf, opts)
	if err != nil {
		return nil, nil, err
	}
	b := buf.Bytes()
	if len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%program.Alignment == 0 {
		return b, sum, nil
	}
	out := align.Bytes(len(b))
	copy(out, b)
	return out, sum, nil
}
