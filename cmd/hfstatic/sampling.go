package main

import (
	"bufio"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/sample"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// samplingFlags are the sampling options shared by generate and chat.
type samplingFlags struct {
	opts sample.Options
	seed int64
	stop []string
}

func (s *samplingFlags) register(f *pflag.FlagSet) {
	f.Float32Var(&s.opts.Temperature, "temperature", 0.8, "sampling temperature (0: greedy)")
	f.IntVar(&s.opts.TopK, "top-k", 40, "keep the k most likely tokens (0: off)")
	f.Float32Var(&s.opts.TopP, "top-p", 0.95, "nucleus sampling mass (1: off)")
	f.Float32Var(&s.opts.MinP, "min-p", 0.05, "drop tokens below min-p × the top probability (0: off)")
	f.Float32Var(&s.opts.RepetitionPenalty, "repeat-penalty", 1, "repetition penalty (1: off)")
	f.Float32Var(&s.opts.PresencePenalty, "presence-penalty", 0, "presence penalty")
	f.Float32Var(&s.opts.FrequencyPenalty, "frequency-penalty", 0, "frequency penalty")
	f.Int64Var(&s.seed, "seed", -1, "random seed (-1: from the clock)")
	f.StringArrayVar(&s.stop, "stop", nil, "stop when this text is generated (repeatable)")
}

func (s *samplingFlags) sampler() (*sample.Sampler, error) {
	o := s.opts
	o.Seed = uint64(s.seed)
	if s.seed < 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	sm, err := sample.New(o)
	if err != nil {
		return nil, usageError{err}
	}
	return sm, nil
}

// textEmitter streams generated tokens as text, holding back text that may start a stop
// string, and ends generation when a stop string appears.
type textEmitter struct {
	w      *bufio.Writer
	stream *tokenizer.Stream
	stops  *sample.StopMatcher
	eos    map[int]bool
}

// newTextEmitter starts a text stream that continues after prompt: the prompt's last token
// primes the detokenizer, so the first new token keeps its leading space.
func newTextEmitter(w io.Writer, tok *tokenizer.Tokenizer, prompt []int, stops []string, eos []int) (*textEmitter, error) {
	m, err := sample.NewStopMatcher(stops)
	if err != nil {
		return nil, usageError{err}
	}
	stream := tok.NewStream(true)
	if len(prompt) > 0 {
		stream.Prime(prompt[len(prompt)-1]) // its text was the user's, not ours to print
	}
	e := &textEmitter{w: bufio.NewWriter(w), stream: stream, stops: m, eos: map[int]bool{}}
	for _, id := range eos {
		e.eos[id] = true
	}
	return e, nil
}

func (e *textEmitter) token(tok int) error {
	if e.eos[tok] {
		return nil
	}
	piece, err := e.stream.Add(tok)
	if err != nil {
		return err
	}
	text, stopped := e.stops.Push(piece)
	e.w.WriteString(text)
	e.w.Flush()
	if stopped {
		return generate.ErrStop
	}
	return nil
}

// finish writes what is still held back (unless a stop string ended generation).
func (e *textEmitter) finish(stopped bool) {
	if !stopped {
		text, _ := e.stops.Push(e.stream.Flush())
		e.w.WriteString(text)
		e.w.WriteString(e.stops.Flush())
	}
	e.w.Flush()
}
