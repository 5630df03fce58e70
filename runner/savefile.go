package runner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"

	"github.com/hfstatic/hfstatic/program"
)

// Session file layout (little-endian):
//
//	magic "HFSSESS\x00", version u32
//	fingerprint: length u32, bytes
//	position u64; history: position × i64
//	per layer: lo u64 (oldest intact position)
//	per layer: k_cache, v_cache, counter bytes (sizes from the program)
//	logits: flag u8 (1: valid), then vocab × f32 when valid
//	CRC-32C (Castagnoli) of everything before, u32
const (
	sessionMagic   = "HFSSESS\x00"
	sessionVersion = 1
	maxFingerprint = 4096
)

// Errors wrapped by a *SessionFileError.
var (
	// ErrWrongProgram: the file was saved from a program with another fingerprint.
	ErrWrongProgram = errors.New("session file belongs to another program")
	// ErrCorruptSession: the file is truncated, damaged, or not a session file.
	ErrCorruptSession = errors.New("session file is corrupted")
)

// SessionFileError reports why a session file cannot be restored. Field names the part of
// the file that is wrong.
type SessionFileError struct {
	Field   string
	Problem string
	Err     error // ErrWrongProgram or ErrCorruptSession
}

func (e *SessionFileError) Error() string {
	return fmt.Sprintf("session file: %s: %s", e.Field, e.Problem)
}

func (e *SessionFileError) Unwrap() error { return e.Err }

func corrupt(field, format string, args ...any) error {
	return &SessionFileError{Field: field, Problem: fmt.Sprintf(format, args...), Err: ErrCorruptSession}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Save writes the session's full state to w, bound to the program's fingerprint. A poisoned
// or closed session cannot be saved.
func (s *Session) Save(w io.Writer) error {
	if err := s.usable(); err != nil {
		return err
	}
	var b bytes.Buffer
	b.Grow(int(s.r.SessionBytes()) + 8*s.pos + 64)
	b.WriteString(sessionMagic)
	b.Write(binary.LittleEndian.AppendUint32(nil, sessionVersion))
	b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(s.r.fingerprint))))
	b.WriteString(s.r.fingerprint)
	b.Write(binary.LittleEndian.AppendUint64(nil, uint64(s.pos)))
	for _, t := range s.history {
		b.Write(binary.LittleEndian.AppendUint64(nil, uint64(t)))
	}
	for _, lo := range s.lo {
		b.Write(binary.LittleEndian.AppendUint64(nil, uint64(lo)))
	}
	for _, name := range s.r.stateNames() {
		b.Write(s.state[name])
	}
	if s.last == nil {
		b.WriteByte(0)
	} else {
		b.WriteByte(1)
		for _, x := range s.last {
			b.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(x)))
		}
	}
	b.Write(binary.LittleEndian.AppendUint32(nil, crc32.Checksum(b.Bytes(), castagnoli)))
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	return nil
}

// stateNames lists the shared state buffers in file order.
func (r *Runner) stateNames() []string {
	var out []string
	for l := range r.man.Metadata.Layers {
		out = append(out, program.KCache(l), program.VCache(l), program.Counter(l))
	}
	return out
}

// maxSessionFile is the largest session file this runner can have written.
func (r *Runner) maxSessionFile() int64 {
	return int64(len(sessionMagic)+4+4+len(r.fingerprint)+8+1+4) +
		8*int64(r.planner.Context+len(r.man.Metadata.Layers)) + r.SessionBytes() + 4*int64(r.man.Metadata.VocabSize)
}

// savedState is a decoded, validated session file.
type savedState struct {
	pos     int
	history []int
	lo      []int
	state   map[string][]byte
	logits  []float32 // nil when stale
}

// Restore replaces the session's state with one saved by Save from the same program. On
// any error (another program's file: ErrWrongProgram; a damaged file: ErrCorruptSession)
// the session is unchanged. A successful Restore clears the poison.
func (s *Session) Restore(r io.Reader) error {
	if s.closed {
		return ErrClosed
	}
	st, err := s.r.readSession(r)
	if err != nil {
		return err
	}
	for _, b := range s.owned {
		clear(b)
	}
	s.masksCleared()
	for name, b := range st.state {
		copy(s.state[name], b)
	}
	s.pos, s.err = st.pos, nil
	copy(s.lo, st.lo)
	s.history = append(s.history[:0], st.history...)
	s.clearLast()
	if st.logits != nil {
		copy(s.dec.logits, st.logits)
		s.setLast(s.dec, 0)
	}
	return nil
}

// RestoreSession returns a new session restored from a file written by Session.Save.
func (r *Runner) RestoreSession(rd io.Reader) (*Session, error) {
	st, err := r.readSession(rd)
	if err != nil {
		return nil, err
	}
	s, err := r.NewSession()
	if err != nil {
		return nil, err
	}
	for name, b := range st.state {
		copy(s.state[name], b)
	}
	s.pos = st.pos
	copy(s.lo, st.lo)
	s.history = append(s.history, st.history...)
	if st.logits != nil {
		copy(s.dec.logits, st.logits)
		s.setLast(s.dec, 0)
	}
	return s, nil
}

// readSession reads and checks a whole session file.
func (r *Runner) readSession(rd io.Reader) (*savedState, error) {
	// The header comes first so that another program's file is reported as such.
	head := make([]byte, len(sessionMagic)+8)
	if _, err := io.ReadFull(rd, head); err != nil {
		return nil, readErr("magic", err)
	}
	if string(head[:len(sessionMagic)]) != sessionMagic {
		return nil, corrupt("magic", "not an hfstatic session file")
	}
	if v := binary.LittleEndian.Uint32(head[len(sessionMagic):]); v != sessionVersion {
		return nil, corrupt("version", "%d is not supported (this build reads version %d)", v, sessionVersion)
	}
	fpLen := binary.LittleEndian.Uint32(head[len(sessionMagic)+4:])
	if fpLen > maxFingerprint {
		return nil, corrupt("fingerprint", "length %d exceeds %d bytes", fpLen, maxFingerprint)
	}
	fp := make([]byte, fpLen)
	if _, err := io.ReadFull(rd, fp); err != nil {
		return nil, readErr("fingerprint", err)
	}
	if string(fp) != r.fingerprint {
		return nil, &SessionFileError{Field: "fingerprint", Err: ErrWrongProgram,
			Problem: fmt.Sprintf("saved from program %q, this program is %q", fp, r.fingerprint)}
	}
	limit := r.maxSessionFile() - int64(len(head)+len(fp))
	rest, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read session file: %w", err)
	}
	if int64(len(rest)) > limit {
		return nil, corrupt("size", "longer than a session of this program can be")
	}
	if len(rest) < 4 {
		return nil, corrupt("checksum", "missing (the file is truncated)")
	}
	data := slices.Concat(head, fp, rest)
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, corrupt("checksum", "CRC-32C %08x, the file says %08x (truncated or damaged)", got, sum)
	}
	d := fieldReader{buf: body[len(head)+len(fp):]}
	md := &r.man.Metadata
	st := &savedState{state: map[string][]byte{}}
	pos := d.u64("position")
	if d.err == nil && pos > uint64(r.planner.Context) {
		return nil, corrupt("position", "%d exceeds the program's context %d", pos, r.planner.Context)
	}
	st.pos = int(pos)
	for i := 0; i < st.pos && d.err == nil; i++ {
		t := d.u64("history")
		if d.err == nil && t >= uint64(md.VocabSize) {
			return nil, corrupt("history", "token %d at index %d is outside the vocabulary [0,%d)", int64(t), i, md.VocabSize)
		}
		st.history = append(st.history, int(t))
	}
	for l := range md.Layers {
		lo := d.u64("layer ranges")
		if rows := uint64(md.Layers[l].CacheRows); d.err == nil && (lo > pos || lo+rows < pos) {
			return nil, corrupt("layer ranges", "layer %d holds positions from %d, impossible at position %d with %d cache rows", l, lo, pos, rows)
		}
		st.lo = append(st.lo, int(lo))
	}
	dec := r.decode
	for _, name := range r.stateNames() {
		spec, _ := dec.Input(name)
		st.state[name] = d.bytes(name, spec.Bytes())
	}
	switch flag := d.bytes("logits", 1); {
	case d.err != nil:
	case flag[0] == 1:
		raw := d.bytes("logits", 4*md.VocabSize)
		if d.err == nil {
			st.logits = make([]float32, md.VocabSize)
			for i := range st.logits {
				st.logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		}
	case flag[0] != 0:
		return nil, corrupt("logits", "flag %d is not 0 or 1", flag[0])
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.buf) != 0 {
		return nil, corrupt("size", "%d unexpected bytes after the logits", len(d.buf))
	}
	for l := range md.Layers {
		if c := int64(binary.LittleEndian.Uint64(st.state[program.Counter(l)])); c != int64(st.pos) {
			return nil, corrupt(program.Counter(l), "%d disagrees with the position %d", c, st.pos)
		}
	}
	return st, nil
}

func readErr(field string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt(field, "the file ends early")
	}
	return fmt.Errorf("read session file: %w", err)
}

// fieldReader reads a session file's fields in order, remembering the first short read.
type fieldReader struct {
	buf []byte
	err error
}

func (d *fieldReader) bytes(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf) {
		d.err = corrupt(field, "needs %d bytes, %d left", n, len(d.buf))
		return nil
	}
	b := d.buf[:n]
	d.buf = d.buf[n:]
	return b
}

func (d *fieldReader) u64(field string) uint64 {
	if b := d.bytes(field, 8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}
