package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/align"
	"github.com/hfstatic/hfstatic/program"
)

// encodeManifest is a valid hf_encode v1 manifest of B sequences of S tokens (no ops: the
// fake executor computes).
func encodeManifest(B, S, V, types int) *program.Manifest {
	md := program.Metadata{Contract: program.EncodeContractName, Version: program.EncodeContractVersion,
		MaxContext: S, VocabSize: V, Tokens: program.Tokens{EOS: []int64{}, Pad: 1},
		Encoder: &program.Encoder{Batch: B, Output: program.OutputEmbedding, Dim: 3, TokenTypes: types, Pooling: program.PoolMean}}
	in, out, _ := program.EncodeIO(&md)
	return &program.Manifest{Metadata: md, Methods: []program.Method{{Name: program.MethodEncode, Step: B * S, Inputs: in, Outputs: out}}}
}

// fakeEncodeExec's step checks the inputs the Encoder fills (right padding with the pad
// id, used rows first) and writes, per used row, [sum of ids, real tokens, sum of types].
type fakeEncodeExec struct {
	B, S  int
	calls int
	// gate, if set, holds each call until it receives, after the call says so on entered
	// (the test controls when calls run); sizes records each call's used rows.
	gate, entered chan struct{}
	sizes         []int
}

func (x *fakeEncodeExec) Bind(method string, bufs map[string][]byte) (Step, error) {
	if method != program.MethodEncode {
		return nil, fmt.Errorf("no method %q", method)
	}
	return fakeEncodeStep{x, bufs}, nil
}

type fakeEncodeStep struct {
	x    *fakeEncodeExec
	bufs map[string][]byte
}

func (s fakeEncodeStep) Run(context.Context) error {
	x := s.x
	if x.gate != nil {
		x.entered <- struct{}{}
		<-x.gate
	}
	x.calls++
	used := 0
	defer func() { x.sizes = append(x.sizes, used) }()
	ids, mask, out := align.AsI64(s.bufs[program.InputIDs]), s.bufs[program.AttentionMask], asF32(s.bufs[program.Embeddings])
	var types []int64
	if b, ok := s.bufs[program.TokenTypeIDs]; ok {
		types = align.AsI64(b)
	}
	clear(out)
	done := false
	for b := range x.B {
		n := 0
		for n < x.S && mask[b*x.S+n] != 0 {
			n++
		}
		for i := n; i < x.S; i++ {
			if mask[b*x.S+i] != 0 || ids[b*x.S+i] != 1 || (types != nil && types[b*x.S+i] != 0) {
				return fmt.Errorf("row %d: position %d after %d real tokens is not padding", b, i, n)
			}
		}
		if n == 0 {
			done = true
			continue
		}
		if done {
			return fmt.Errorf("row %d used after an empty row", b)
		}
		used++
		for i := range n {
			out[b*3] += float32(ids[b*x.S+i])
			if types != nil {
				out[b*3+2] += float32(types[b*x.S+i])
			}
		}
		out[b*3+1] = float32(n)
	}
	return nil
}

func TestEncoderPacksSequencesIntoCalls(t *testing.T) {
	x := &fakeEncodeExec{B: 2, S: 4}
	e, err := NewEncoder(encodeManifest(2, 4, 10, 2), x, EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	seqs := []Sequence{{IDs: []int{1, 2, 3}}, {IDs: []int{4}, Types: []int{1}}, {IDs: []int{9, 9, 9, 9}, Types: []int{0, 1, 1, 1}},
		{IDs: []int{5, 6}}, {IDs: []int{7}}}
	rows, err := e.Encode(context.Background(), seqs)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{6, 3, 0}, {4, 1, 1}, {36, 4, 3}, {11, 2, 0}, {7, 1, 0}}
	if !slices.EqualFunc(rows, want, slices.Equal) {
		t.Errorf("rows %v, want %v", rows, want)
	}
	if x.calls != 3 {
		t.Errorf("%d calls of the method for 5 sequences of batch 2, want 3", x.calls)
	}
}

func TestEncoderRefusesBadSequencesBeforeRunning(t *testing.T) {
	x := &fakeEncodeExec{B: 2, S: 4}
	e, err := NewEncoder(encodeManifest(2, 4, 10, 2), x, EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ok := Sequence{IDs: []int{1}}
	tests := []struct {
		name  string
		seqs  []Sequence
		is    error
		index int
	}{
		{"no sequences", nil, ErrNoSequences, -1},
		{"empty sequence", []Sequence{ok, {}}, ErrEmptySequence, 1},
		{"too long", []Sequence{ok, ok, {IDs: []int{1, 2, 3, 4, 5}}}, ErrSequenceTooLong, 2},
		{"id out of range", []Sequence{{IDs: []int{1, 10}}}, ErrTokenOutOfRange, 0},
		{"negative id", []Sequence{{IDs: []int{-1}}}, ErrTokenOutOfRange, 0},
		{"type out of range", []Sequence{{IDs: []int{1}, Types: []int{2}}}, ErrTokenType, 0},
		{"types of another length", []Sequence{{IDs: []int{1, 2}, Types: []int{0}}}, ErrTokenType, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Encode(context.Background(), tc.seqs)
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v, want %v", err, tc.is)
			}
			var se *SequenceError
			if tc.index >= 0 && (!errors.As(err, &se) || se.Index != tc.index) {
				t.Errorf("error %v does not name sequence %d", err, tc.index)
			}
			if x.calls != 0 {
				t.Errorf("the method ran %d times for refused input", x.calls)
			}
		})
	}
	e.Close()
	if _, err := e.Encode(context.Background(), []Sequence{ok}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Encode after Close: %v", err)
	}
}

func TestEncoderBoundsTheTokensOfACall(t *testing.T) {
	x := &fakeEncodeExec{B: 3, S: 4}
	e, err := NewEncoder(encodeManifest(3, 4, 10, 0), x, EncoderOptions{MaxTokens: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// 3+2 (5 tokens) | 4+1 | 1+1+1 (the batch of 3 is full) | 2: four calls
	seqs := []Sequence{{IDs: []int{1, 1, 1}}, {IDs: []int{2, 2}}, {IDs: []int{3, 3, 3, 3}}, {IDs: []int{4}}, {IDs: []int{4}}, {IDs: []int{4}}, {IDs: []int{4}}, {IDs: []int{5, 5}}}
	rows, err := e.Encode(context.Background(), seqs)
	if err != nil {
		t.Fatal(err)
	}
	if x.calls != 4 || rows[2][0] != 12 || rows[7][0] != 10 {
		t.Errorf("%d calls, rows %v", x.calls, rows)
	}
}

func TestEncoderStopsBetweenCallsWhenCancelled(t *testing.T) {
	x := &fakeEncodeExec{B: 1, S: 4}
	e, err := NewEncoder(encodeManifest(1, 4, 10, 0), x, EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Encode(ctx, []Sequence{{IDs: []int{1}}, {IDs: []int{2}}}); !errors.Is(err, context.Canceled) || x.calls != 0 {
		t.Errorf("error %v after %d calls, want context.Canceled before any", err, x.calls)
	}
}

func TestRunnerAndEncoderTakeOnlyTheirContract(t *testing.T) {
	if _, err := New(encodeManifest(2, 4, 10, 0), "fp", &fakeEncodeExec{B: 2, S: 4}, Options{}); !errors.Is(err, ErrNotGenerative) {
		t.Errorf("New(hf_encode program): %v, want ErrNotGenerative", err)
	}
	if _, err := NewEncoder(goodSpec.manifest(), &fakeEncodeExec{}, EncoderOptions{}); !errors.Is(err, ErrNotEncoder) {
		t.Errorf("NewEncoder(hf_static program): %v, want ErrNotEncoder", err)
	}
}

func TestValidateContractRejectsBadEncodeManifests(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(m *program.Manifest)
		field   string
		problem string
	}{
		{"zero context", func(m *program.Manifest) { m.Metadata.MaxContext = 0 }, "max_context", "≥ 1"},
		{"caches", func(m *program.Manifest) { m.Metadata.CacheDType = program.F16 }, "cache_dtype", "no caches"},
		{"layers", func(m *program.Manifest) { m.Metadata.Layers = []program.Layer{{}} }, "layers", "no caches"},
		{"no encoder metadata", func(m *program.Manifest) { m.Metadata.Encoder = nil }, "encoder", "missing"},
		{"zero batch", func(m *program.Manifest) { m.Metadata.Encoder.Batch = 0 }, "encoder.batch", "≥ 1"},
		{"unknown output", func(m *program.Manifest) { m.Metadata.Encoder.Output = "logits" }, "encoder.output", `"logits"`},
		{"zero dim", func(m *program.Manifest) { m.Metadata.Encoder.Dim = 0 }, "encoder.dim", "≥ 1"},
		{"unknown pooling", func(m *program.Manifest) { m.Metadata.Encoder.Pooling = "weighted" }, "encoder.pooling", "weighted"},
		{"matryoshka size beyond dim", func(m *program.Manifest) { m.Metadata.Encoder.MatryoshkaDimensions = []int{2, 4} }, "encoder.matryoshka_dimensions", "4"},
		{"default prompt not a prompt", func(m *program.Manifest) { m.Metadata.Encoder.DefaultPrompt = "query" }, "encoder.default_prompt", "query"},
		{"pair format on embeddings", func(m *program.Manifest) { m.Metadata.Encoder.Pair = &program.PairFormat{Kind: program.PairTokenizer} }, "encoder.pair", "score"},
		{"relevance of embeddings", func(m *program.Manifest) { m.Metadata.Encoder.Relevance = program.RelevanceSigmoid }, "encoder.relevance", "score"},
		{"pad outside vocabulary", func(m *program.Manifest) { m.Metadata.Tokens.Pad = 10 }, "tokens.pad", "outside"},
		{"two methods", func(m *program.Manifest) { m.Methods = append(m.Methods, program.Method{Name: "decode"}) }, "methods", "exactly one"},
		{"wrong step", func(m *program.Manifest) { m.Methods[0].Step = 7 }, "encode.step", "2 × 4"},
		{"logits", func(m *program.Manifest) { m.Methods[0].Logits = program.LogitsLast }, "encode.logits", "no logits"},
		{"token types without metadata", func(m *program.Manifest) { m.Metadata.Encoder.TokenTypes = 0 }, "encode input token_type_ids", "not part of the contract"},
		{"scores instead of embeddings", func(m *program.Manifest) { m.Methods[0].Outputs[0].Name = program.Scores }, "encode output embeddings", "missing"},
		{"short mask", func(m *program.Manifest) { m.Methods[0].Inputs[1].Shape = program.Shape{2, 3} }, "encode input attention_mask", "want bool [2 4]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := encodeManifest(2, 4, 10, 2)
			tc.mutate(m)
			err := ValidateContract(m)
			var ce *ContractError
			if !errors.As(err, &ce) || !strings.Contains(ce.Field, tc.field) || !strings.Contains(ce.Error(), tc.problem) {
				t.Errorf("error %v, want a ContractError on %q saying %q", err, tc.field, tc.problem)
			}
		})
	}
	if err := ValidateContract(encodeManifest(2, 4, 10, 2)); err != nil {
		t.Errorf("valid manifest: %v", err)
	}
	m := goodSpec.manifest()
	m.Metadata.Encoder = &program.Encoder{Batch: 1}
	if err := ValidateContract(m); err == nil || !strings.Contains(err.Error(), "encoder") {
		t.Errorf("hf_static program with encoder metadata: %v", err)
	}
}

// gated is a fake executor whose calls wait for the test.
func gated(B int) *fakeEncodeExec {
	return &fakeEncodeExec{B: B, S: 4, gate: make(chan struct{}), entered: make(chan struct{}, 1)}
}

// waitQueued waits until n requests wait in e's queue.
func waitQueued(e *Encoder, n int) {
	for {
		e.mu.Lock()
		q := len(e.queue)
		e.mu.Unlock()
		if q == n {
			return
		}
		runtime.Gosched()
	}
}

// Requests that arrive while a call runs share the next call.
func TestEncoderSharesCallsAmongConcurrentRequests(t *testing.T) {
	x := gated(4)
	e, err := NewEncoder(encodeManifest(4, 4, 10, 0), x, EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	type answer struct {
		rows [][]float32
		err  error
	}
	ask := func(ids ...int) chan answer {
		c := make(chan answer, 1)
		go func() {
			rows, err := e.Encode(context.Background(), []Sequence{{IDs: ids}})
			c <- answer{rows, err}
		}()
		return c
	}
	first := ask(1)
	<-x.entered // the first request's call waits at the gate
	var rest []chan answer
	for i := range 5 {
		rest = append(rest, ask(i+2, i+2))
	}
	waitQueued(e, 5)
	x.gate <- struct{}{} // the first call
	<-x.entered
	x.gate <- struct{}{} // 4 of the 5 waiting requests
	<-x.entered
	x.gate <- struct{}{} // the last one
	if a := <-first; a.err != nil || a.rows[0][0] != 1 {
		t.Fatalf("first request: %v %v", a.rows, a.err)
	}
	for i, c := range rest {
		if a := <-c; a.err != nil || a.rows[0][0] != float32(2*(i+2)) || a.rows[0][1] != 2 {
			t.Errorf("request %d: %v %v", i+1, a.rows, a.err)
		}
	}
	if !slices.Equal(x.sizes, []int{1, 4, 1}) {
		t.Errorf("calls of %v sequences, want [1 4 1]", x.sizes)
	}
}

// A request cancelled while it waits returns at once, and its sequences never run.
func TestCancelledWaitingRequestsDoNotRun(t *testing.T) {
	x := gated(1)
	e, err := NewEncoder(encodeManifest(1, 4, 10, 0), x, EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { _, err := e.Encode(context.Background(), []Sequence{{IDs: []int{1}}}); first <- err }()
	<-x.entered
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { _, err := e.Encode(ctx, []Sequence{{IDs: []int{2}}, {IDs: []int{3}}}); second <- err }()
	waitQueued(e, 1)
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled request: %v", err)
	}
	x.gate <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	e.Close()
	if x.calls != 1 {
		t.Errorf("%d calls, want 1 (the cancelled request's sequences never run)", x.calls)
	}
}
