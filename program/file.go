package program

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"
	"sync/atomic"
)

// File layout (all integers little-endian):
//
//	[0, 64)            header: "HFSTATIC", format version u32, zero padding (checked)
//	[64, M)            tensor and asset data, each starting at a multiple of Alignment
//	[M, M+len)         manifest, JSON
//	[end-64, end)      trailer: "HFSTTAIL", manifest offset u64, manifest length u64,
//	                   manifest CRC-32C u32, file size u64, zero padding (checked)
//
// The manifest is written last so a program can be streamed to disk one tensor at a time.
const (
	Magic         = "HFSTATIC"
	trailerMagic  = "HFSTTAIL"
	FormatVersion = 1
	// Alignment of every tensor's data, in bytes.
	Alignment   = 64
	headerSize  = 64
	trailerSize = 64
	// maxManifest bounds the manifest size so a corrupted length cannot exhaust memory.
	maxManifest = 256 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C used for tensors, assets and the manifest.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Errors returned by Decode. Use errors.Is; the returned errors carry more context.
var (
	ErrNotProgram = errors.New("not an hfstatic program (bad magic)")
	ErrTruncated  = errors.New("program file is truncated")
	ErrChecksum   = errors.New("program checksum mismatch (file corrupted)")
)

// VersionError reports a file format version this package does not read.
type VersionError struct{ Got, Want int }

func (e *VersionError) Error() string {
	if e.Got > e.Want {
		return fmt.Sprintf("program format version %d was made by a newer hfstatic (this build reads version %d): upgrade hfstatic, or re-export the model with this one", e.Got, e.Want)
	}
	return fmt.Sprintf("program format version %d is not supported (this build reads version %d); re-export the model", e.Got, e.Want)
}

// FormatError reports a structural problem in the manifest, naming the offending item.
type FormatError struct {
	Item    string // e.g. `tensor "model.norm"`, `method "decode" op 3`
	Problem string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("invalid program: %s: %s", e.Item, e.Problem)
}

// Writer streams a program file: data first, then the manifest and trailer.
type Writer struct {
	w     io.Writer
	off   int64
	man   Manifest
	names map[string]bool
	err   error
}

// NewWriter writes the header to w and returns a Writer.
func NewWriter(w io.Writer) (*Writer, error) {
	hdr := make([]byte, headerSize)
	copy(hdr, Magic)
	binary.LittleEndian.PutUint32(hdr[8:], FormatVersion)
	if _, err := w.Write(hdr); err != nil {
		return nil, fmt.Errorf("write program header: %w", err)
	}
	return &Writer{w: w, off: headerSize, names: map[string]bool{}}, nil
}

func (w *Writer) pad() error {
	if r := w.off % Alignment; r != 0 {
		n := Alignment - r
		if _, err := w.w.Write(make([]byte, n)); err != nil {
			return err
		}
		w.off += n
	}
	return nil
}

func (w *Writer) blob(name string, data []byte) (off int64, err error) {
	if w.err != nil {
		return 0, w.err
	}
	if name == "" || w.names[name] {
		return 0, fmt.Errorf("program writer: empty or duplicate name %q", name)
	}
	if err := w.pad(); err != nil {
		w.err = err
		return 0, err
	}
	off = w.off
	if _, err := w.w.Write(data); err != nil {
		w.err = fmt.Errorf("write %q: %w", name, err)
		return 0, w.err
	}
	w.off += int64(len(data))
	w.names[name] = true
	return off, nil
}

// WriteTensor appends a constant tensor. For plain dtypes len(data) must equal the shape's size.
func (w *Writer) WriteTensor(name string, dtype DType, shape Shape, data []byte) error {
	if !dtype.valid() {
		return fmt.Errorf("tensor %q: unknown dtype %q", name, dtype)
	}
	if eb := dtype.ElemBytes(); eb > 0 && len(data) != shape.Elems()*eb {
		return fmt.Errorf("tensor %q: %d bytes for %s %v", name, len(data), dtype, shape)
	}
	off, err := w.blob(name, data)
	if err != nil {
		return err
	}
	w.man.Tensors = append(w.man.Tensors, Tensor{Name: name, DType: dtype, Shape: append(Shape(nil), shape...),
		Offset: off, Size: int64(len(data)), CRC32C: Checksum(data)})
	return nil
}

// WriteAsset appends an opaque named blob.
func (w *Writer) WriteAsset(name string, data []byte) error {
	off, err := w.blob("asset:"+name, data)
	if err != nil {
		return err
	}
	w.man.Assets = append(w.man.Assets, Asset{Name: name, Offset: off, Size: int64(len(data)), CRC32C: Checksum(data)})
	return nil
}

// Finish validates the manifest made of meta, methods and the written tensors, then
// writes it and the trailer. It returns the program's fingerprint.
func (w *Writer) Finish(meta Metadata, methods []Method) (string, error) {
	if w.err != nil {
		return "", w.err
	}
	w.man.Metadata = meta
	w.man.Methods = methods
	if err := w.man.validate(-1); err != nil {
		return "", err
	}
	js, err := json.Marshal(&w.man)
	if err != nil {
		return "", fmt.Errorf("encode manifest: %w", err)
	}
	if err := w.pad(); err != nil {
		return "", err
	}
	moff := w.off
	if _, err := w.w.Write(js); err != nil {
		return "", fmt.Errorf("write manifest: %w", err)
	}
	w.off += int64(len(js))
	tr := make([]byte, trailerSize)
	copy(tr, trailerMagic)
	binary.LittleEndian.PutUint64(tr[8:], uint64(moff))
	binary.LittleEndian.PutUint64(tr[16:], uint64(len(js)))
	binary.LittleEndian.PutUint32(tr[24:], Checksum(js))
	binary.LittleEndian.PutUint64(tr[28:], uint64(w.off+trailerSize))
	if _, err := w.w.Write(tr); err != nil {
		return "", fmt.Errorf("write trailer: %w", err)
	}
	w.off += trailerSize
	return fingerprint(js), nil
}

func fingerprint(manifest []byte) string {
	h := sha256.Sum256(manifest)
	return hex.EncodeToString(h[:16])
}

// File is a decoded program. Its tensor data aliases the bytes given to Decode.
type File struct {
	Manifest Manifest
	// Fingerprint identifies the program (a hash of its manifest, which holds every
	// tensor's checksum).
	Fingerprint string
	data        []byte
}

// DecodeOptions tunes Decode.
type DecodeOptions struct {
	// SkipDataChecksums skips verifying tensor and asset checksums (the manifest's
	// checksum is always verified).
	SkipDataChecksums bool
	// Workers verifies tensor checksums on this many goroutines (0 or 1: the caller's).
	Workers int
}

// Decode parses and validates a program held in data (typically an mmapped file).
// The returned File references data; data must stay valid and unmodified while it is used.
func Decode(data []byte, opts DecodeOptions) (*File, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: the file is empty", ErrNotProgram)
	}
	if len(data) < len(Magic) || !bytes.Equal(data[:len(Magic)], []byte(Magic)) {
		if len(data) < len(Magic) && bytes.HasPrefix([]byte(Magic), data) {
			return nil, fmt.Errorf("%w: %d bytes, header needs %d", ErrTruncated, len(data), headerSize)
		}
		return nil, ErrNotProgram
	}
	if len(data) < headerSize {
		return nil, fmt.Errorf("%w: %d bytes, header needs %d", ErrTruncated, len(data), headerSize)
	}
	if v := int(binary.LittleEndian.Uint32(data[8:])); v != FormatVersion {
		return nil, &VersionError{Got: v, Want: FormatVersion}
	}
	if k := firstNonZero(data[12:headerSize]); k >= 0 {
		return nil, &FormatError{Item: "header", Problem: fmt.Sprintf("reserved byte %d is %#x, want 0", 12+k, data[12+k])}
	}
	if len(data) < headerSize+trailerSize {
		return nil, fmt.Errorf("%w: %d bytes, no trailer", ErrTruncated, len(data))
	}
	tr := data[len(data)-trailerSize:]
	if !bytes.Equal(tr[:8], []byte(trailerMagic)) {
		return nil, fmt.Errorf("%w: no trailer at the end of the %d-byte file", ErrTruncated, len(data))
	}
	moff := binary.LittleEndian.Uint64(tr[8:])
	mlen := binary.LittleEndian.Uint64(tr[16:])
	mcrc := binary.LittleEndian.Uint32(tr[24:])
	size := binary.LittleEndian.Uint64(tr[28:])
	if k := firstNonZero(tr[36:]); k >= 0 {
		return nil, &FormatError{Item: "trailer", Problem: fmt.Sprintf("reserved byte %d is %#x, want 0", 36+k, tr[36+k])}
	}
	if size != uint64(len(data)) {
		return nil, fmt.Errorf("%w: trailer says %d bytes, file has %d", ErrTruncated, size, len(data))
	}
	dataEnd := uint64(len(data) - trailerSize)
	if mlen > maxManifest || moff < headerSize || moff > dataEnd || mlen > dataEnd-moff {
		return nil, &FormatError{Item: "trailer", Problem: fmt.Sprintf("manifest range [%d,+%d) outside the file", moff, mlen)}
	}
	js := data[moff : moff+mlen]
	if Checksum(js) != mcrc {
		return nil, fmt.Errorf("%w: manifest", ErrChecksum)
	}
	f := &File{data: data, Fingerprint: fingerprint(js)}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f.Manifest); err != nil {
		return nil, &FormatError{Item: "manifest", Problem: err.Error()}
	}
	if err := f.Manifest.validate(int64(moff)); err != nil {
		return nil, err
	}
	if err := f.Manifest.fit(int64(len(data)), AddressLimit); err != nil {
		return nil, err
	}
	if !opts.SkipDataChecksums {
		if err := verifyTensors(data, f.Manifest.Tensors, opts.Workers); err != nil {
			return nil, err
		}
		for _, a := range f.Manifest.Assets {
			if Checksum(data[a.Offset:a.Offset+a.Size]) != a.CRC32C {
				return nil, fmt.Errorf("%w: asset %q", ErrChecksum, a.Name)
			}
		}
	}
	return f, nil
}

// firstNonZero returns the index of the first non-zero byte of b, or -1.
func firstNonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}

// TensorData returns the bytes of a constant tensor (aliasing the decoded file).
func (f *File) TensorData(name string) (Tensor, []byte, bool) {
	t, ok := f.Manifest.Tensor(name)
	if !ok {
		return Tensor{}, nil, false
	}
	return *t, f.data[t.Offset : t.Offset+t.Size : t.Offset+t.Size], true
}

// Asset returns an asset's bytes (aliasing the decoded file).
func (f *File) Asset(name string) ([]byte, bool) {
	for _, a := range f.Manifest.Assets {
		if a.Name == name {
			return f.data[a.Offset : a.Offset+a.Size : a.Offset+a.Size], true
		}
	}
	return nil, false
}

// Size is the file size in bytes.
func (f *File) Size() int64 { return int64(len(f.data)) }

// Tensors returns the table of tensors written so far.
func (w *Writer) Tensors() []Tensor { return append([]Tensor(nil), w.man.Tensors...) }

// verifyTensors checks every tensor's checksum, largest first, on up to workers goroutines.
func verifyTensors(data []byte, tensors []Tensor, workers int) error {
	order := make([]int, len(tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(tensors[b].Size, tensors[a].Size) })
	var (
		next   atomic.Int64
		mu     sync.Mutex
		failed error
		wg     sync.WaitGroup
	)
	work := func() {
		defer wg.Done()
		for {
			k := int(next.Add(1) - 1)
			if k >= len(order) {
				return
			}
			t := tensors[order[k]]
			if Checksum(data[t.Offset:t.Offset+t.Size]) != t.CRC32C {
				mu.Lock()
				if failed == nil {
					failed = fmt.Errorf("%w: tensor %q", ErrChecksum, t.Name)
				}
				mu.Unlock()
				return
			}
		}
	}
	workers = max(1, min(workers, len(order)))
	wg.Add(workers)
	for range workers - 1 {
		go work()
	}
	work()
	wg.Wait()
	return failed
}
