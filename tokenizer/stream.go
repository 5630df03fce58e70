package tokenizer

import (
	"strings"
)

// Stream turns generated ids into text incrementally. Add returns text as
// soon as it is final: a character split across byte tokens is held back
// until complete, so every returned piece is valid UTF-8. The concatenation
// of everything Add and Flush return equals Decode of all ids.
//
// A Stream is not safe for concurrent use.
type Stream struct {
	t           *Tokenizer
	skipSpecial bool
	ids         []int  // window: context ids (already emitted) followed by pending ids
	emitted     string // prefix of Decode(ids) already returned
	inByteRun   bool   // the last visible token is a <0xNN> byte-fallback token
}

// NewStream starts a streaming detokenizer.
func (t *Tokenizer) NewStream(skipSpecial bool) *Stream {
	return &Stream{t: t, skipSpecial: skipSpecial}
}

// Add appends one id and returns the text that became final ("" if none).
func (s *Stream) Add(id int) (string, error) {
	tok, ok := s.t.Token(id)
	if !ok {
		return "", &UnknownIDError{ID: id, VocabSize: len(s.t.tokens)}
	}
	s.ids = append(s.ids, id)
	if !(s.skipSpecial && s.t.special[id]) {
		_, isByte := fallbackByte(tok)
		s.inByteRun = isByte && s.t.byteFallbackDecoder
	}
	// A run of byte-fallback tokens is decoded as a whole (one U+FFFD per
	// byte if any part is invalid), so it is final only once it ends.
	if s.inByteRun {
		return "", nil
	}
	text, err := s.t.Decode(s.ids, s.skipSpecial)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(text, s.emitted) {
		return "", nil // cannot happen with the decoders implemented here
	}
	// A trailing U+FFFD may be an incomplete character that the next
	// byte-level token completes (invalid UTF-8 decodes like Rust's
	// from_utf8_lossy: one U+FFFD for the whole incomplete tail). Everything
	// before it is final.
	if strings.HasSuffix(text, "\uFFFD") {
		final := text[:len(text)-len("\uFFFD")]
		out := final[min(len(s.emitted), len(final)):]
		if len(final) > len(s.emitted) {
			s.emitted = final
		}
		return out, nil
	}
	out := text[len(s.emitted):]
	// Keep the last id as context: decoders such as Strip or Metaspace
	// treat the first token specially, and the context makes that first
	// token one that was already emitted. A context that decodes to nothing
	// (a skipped special token, a stripped space) cannot play that role, so
	// the window is kept whole until a visible token arrives.
	last := s.ids[len(s.ids)-1]
	ctx, err := s.t.Decode([]int{last}, s.skipSpecial)
	if err != nil {
		return "", err
	}
	if ctx != "" && strings.HasSuffix(text, ctx) && !strings.ContainsRune(ctx, '\uFFFD') {
		s.ids = append(s.ids[:0], last)
		s.emitted = ctx
	} else {
		s.emitted = text
	}
	return out, nil
}

// Prime starts the stream after text that was already shown (the prompt): id, its last
// token, becomes context, so that the next token keeps its leading space, and none of id's
// own text is returned later — also when id is a byte-fallback token, whose byte Add would
// hold back and then return with the next token's text.
func (s *Stream) Prime(id int) error {
	if _, ok := s.t.Token(id); !ok {
		return &UnknownIDError{ID: id, VocabSize: len(s.t.tokens)}
	}
	text, err := s.t.Decode([]int{id}, s.skipSpecial)
	if err != nil {
		return err
	}
	s.ids = append(s.ids[:0], id)
	s.emitted, s.inByteRun = text, false
	return nil
}

// Flush returns the text still held back (for example an incomplete
// character at the end of generation, decoded as U+FFFD) and resets the
// stream.
func (s *Stream) Flush() string {
	text, err := s.t.Decode(s.ids, s.skipSpecial)
	out := ""
	if err == nil && strings.HasPrefix(text, s.emitted) {
		out = text[len(s.emitted):]
	}
	s.ids, s.emitted, s.inByteRun = s.ids[:0], "", false
	return out
}
