package tokenizer

import (
	"encoding/json"
	"strings"
	"unicode"
)

// preTokenizer cuts pieces into smaller pieces; the model encodes each one
// separately. Empty pieces are dropped, as in Hugging Face.
type preTokenizer interface {
	split(in []piece) []piece
}

type preTokenizerJSON struct {
	Type             string            `json:"type"`
	PreTokenizers    []json.RawMessage `json:"pretokenizers"`
	Pattern          patternJSON       `json:"pattern"`
	Behavior         string            `json:"behavior"`
	Invert           bool              `json:"invert"`
	AddPrefixSpace   *bool             `json:"add_prefix_space"`
	UseRegex         *bool             `json:"use_regex"`
	Replacement      string            `json:"replacement"`
	PrependScheme    string            `json:"prepend_scheme"`
	Split            *bool             `json:"split"`
	IndividualDigits bool              `json:"individual_digits"`
}

// parsePreTokenizerChain parses the pre_tokenizer. byteLevel reports that a
// ByteLevel pre-tokenizer ends the chain: then the byte-to-character mapping
// is skipped and the model works on raw bytes (same result, less work).
func parsePreTokenizerChain(raw json.RawMessage) (pt preTokenizer, byteLevel bool, err error) {
	if isNull(raw) {
		return nil, false, nil
	}
	var j preTokenizerJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, false, invalidf("pre_tokenizer: %v", err)
	}
	if j.Type != "Sequence" {
		pt, bl, err := parsePreTokenizer(j)
		return pt, bl, err
	}
	var seq sequencePreTokenizer
	for k, r := range j.PreTokenizers {
		var sj preTokenizerJSON
		if err := json.Unmarshal(r, &sj); err != nil {
			return nil, false, invalidf("pre_tokenizer %d: %v", k, err)
		}
		if sj.Type == "Sequence" {
			return nil, false, &UnsupportedError{Component: "pre_tokenizer", Type: "nested Sequence"}
		}
		p, bl, err := parsePreTokenizer(sj)
		if err != nil {
			return nil, false, err
		}
		if bl && k != len(j.PreTokenizers)-1 {
			// Later pre-tokenizers must see the mapped characters.
			p = mappedByteLevel{p.(byteLevelPreTokenizer)}
			bl = false
		}
		byteLevel = byteLevel || bl
		seq = append(seq, p)
	}
	return seq, byteLevel, nil
}

func parsePreTokenizer(j preTokenizerJSON) (preTokenizer, bool, error) {
	switch j.Type {
	case "ByteLevel":
		bl := byteLevelPreTokenizer{addPrefixSpace: j.AddPrefixSpace != nil && *j.AddPrefixSpace}
		if j.UseRegex == nil || *j.UseRegex {
			bl.regex = gpt2Scanner{}
		}
		return bl, true, nil
	case "Split":
		p, err := j.Pattern.compile("pre_tokenizer Split")
		if err != nil {
			return nil, false, err
		}
		b, err := parseBehavior(j.Behavior)
		if err != nil {
			return nil, false, err
		}
		return splitPreTokenizer{pattern: p, behavior: b, invert: j.Invert}, false, nil
	case "Metaspace":
		return newMetaspace(j)
	case "Digits":
		b := behaviorContiguous
		if j.IndividualDigits {
			b = behaviorIsolated
		}
		return splitPreTokenizer{pattern: runePattern(unicode.IsNumber), behavior: b}, false, nil
	case "BertPreTokenizer":
		return bertPreTokenizer(), false, nil
	case "WhitespaceSplit":
		return whitespaceSplit(), false, nil
	case "Whitespace":
		p, err := compileRegex(`\w+|[^\w\s]+`, "pre_tokenizer Whitespace")
		if err != nil {
			return nil, false, err
		}
		return splitPreTokenizer{pattern: p, behavior: behaviorRemoved, invert: true}, false, nil
	}
	return nil, false, &UnsupportedError{Component: "pre_tokenizer", Type: j.Type}
}

// keepsBytes reports whether pt passes every character of its input on to
// the model (mapped, or with spaces replaced, perhaps with one prepended):
// then a segment's length bounds its tokens as its words' lengths do. Only
// splitting with the Removed behaviour (Whitespace, WhitespaceSplit, BERT's)
// drops text.
func keepsBytes(pt preTokenizer) bool {
	switch pt := pt.(type) {
	case nil, byteLevelPreTokenizer, mappedByteLevel, metaspace:
		return true
	case splitPreTokenizer:
		return pt.behavior != behaviorRemoved
	case sequencePreTokenizer:
		for _, p := range pt {
			if !keepsBytes(p) {
				return false
			}
		}
		return true
	}
	return false
}

// minWords is a lower bound on the non-empty pieces pt cuts text into (each
// of which becomes at least one token), counted without cutting: EncodeLimit
// refuses a segment of more words than it has room for before its pieces are
// built (5 MB of short words took BERT's tokenizer seconds and 400 MB to
// refuse otherwise). It counts the words (runs of non-whitespace) a
// whitespace split keeps apart, or the space-separated runs holding
// non-whitespace that Metaspace starts pieces at; the pre-tokenizers after the
// first in a sequence must neither merge pieces (none does) nor drop
// non-whitespace text (a Removed split on another pattern may): else 0.
func minWords(pt preTokenizer, text string) int {
	first := pt
	if seq, ok := pt.(sequencePreTokenizer); ok && len(seq) > 0 {
		first = seq[0]
		for _, p := range seq[1:] {
			if sp, ok := p.(splitPreTokenizer); ok && sp.behavior == behaviorRemoved && !sp.atSpaces {
				return 0
			}
		}
	}
	switch p := first.(type) {
	case splitPreTokenizer:
		if p.atSpaces {
			return countRuns(text, isWhiteSpace)
		}
	case metaspace:
		if p.splitWords {
			return countRuns(text, func(r rune) bool { return r == ' ' })
		}
	}
	return 0
}

// countRuns counts the maximal runs of text between separators that hold a
// character other than whitespace.
func countRuns(text string, sep func(rune) bool) int {
	n, solid := 0, false
	for _, r := range text {
		switch {
		case sep(r):
			solid = false
		case !solid && !isWhiteSpace(r):
			n++
			solid = true
		}
	}
	return n
}

type sequencePreTokenizer []preTokenizer

func (seq sequencePreTokenizer) split(in []piece) []piece {
	for _, p := range seq {
		in = p.split(in)
	}
	return in
}

type splitBehavior int

const (
	behaviorRemoved splitBehavior = iota
	behaviorIsolated
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

func parseBehavior(s string) (splitBehavior, error) {
	switch s {
	case "Removed":
		return behaviorRemoved, nil
	case "Isolated":
		return behaviorIsolated, nil
	case "MergedWithPrevious":
		return behaviorMergedWithPrevious, nil
	case "MergedWithNext":
		return behaviorMergedWithNext, nil
	case "Contiguous":
		return behaviorContiguous, nil
	}
	return 0, &UnsupportedError{Component: "pre_tokenizer Split behavior", Type: s}
}

// splitPreTokenizer is Hugging Face's Split: matches of pattern become
// delimiters handled according to behavior.
type splitPreTokenizer struct {
	pattern  pattern
	behavior splitBehavior
	invert   bool
	atSpaces bool // pattern is isWhiteSpace, behavior Removed (whitespaceSplit)
}

// whitespaceSplit is Hugging Face's WhitespaceSplit: words between
// whitespace, the whitespace dropped.
func whitespaceSplit() splitPreTokenizer {
	return splitPreTokenizer{pattern: runePattern(isWhiteSpace), behavior: behaviorRemoved, atSpaces: true}
}

// isolatedSplitter is implemented by patterns that can emit Isolated
// pieces directly, without building a list of match spans.
type isolatedSplitter interface {
	appendIsolated(p piece, out []piece) []piece
}

func (sp splitPreTokenizer) split(in []piece) []piece {
	size := len(in)
	for _, p := range in {
		size += len(p.text) / 4
	}
	out := make([]piece, 0, size)
	if fast, ok := sp.pattern.(isolatedSplitter); ok && sp.behavior == behaviorIsolated && !sp.invert {
		for _, p := range in {
			out = fast.appendIsolated(p, out)
		}
		return out
	}
	var spans [][2]int
	for _, p := range in {
		spans = sp.pattern.matches(p.text, spans[:0])
		out = splitByMatches(p, spans, sp.behavior, sp.invert, out)
	}
	return out
}

// splitByMatches turns match spans into pieces the way Hugging Face's
// NormalizedString::split does, dropping empty pieces.
func splitByMatches(p piece, spans [][2]int, behavior splitBehavior, invert bool, out []piece) []piece {
	type part struct {
		start, end int
		match      bool
	}
	s := p.text
	if behavior == behaviorIsolated && !invert {
		prev := 0
		for _, sp := range spans {
			if prev != sp[0] {
				out = append(out, piece{text: s[prev:sp[0]], first: p.first && prev == 0})
			}
			if sp[0] != sp[1] {
				out = append(out, piece{text: s[sp[0]:sp[1]], first: p.first && sp[0] == 0})
			}
			prev = sp[1]
		}
		if prev != len(s) {
			out = append(out, piece{text: s[prev:], first: p.first && prev == 0})
		}
		return out
	}
	parts := make([]part, 0, 2*len(spans)+1)
	prev := 0
	for _, sp := range spans {
		if prev != sp[0] {
			parts = append(parts, part{prev, sp[0], invert})
		}
		parts = append(parts, part{sp[0], sp[1], !invert})
		prev = sp[1]
	}
	if prev != len(s) {
		parts = append(parts, part{prev, len(s), invert})
	}
	var kept []part // pieces with match=true mean "remove"
	switch behavior {
	case behaviorRemoved:
		kept = parts
	case behaviorIsolated:
		kept = parts
		for i := range kept {
			kept[i].match = false
		}
	case behaviorMergedWithPrevious:
		prevMatch := false
		for _, pt := range parts {
			if pt.match && !prevMatch && len(kept) > 0 {
				kept[len(kept)-1].end = pt.end
			} else {
				kept = append(kept, part{pt.start, pt.end, false})
			}
			prevMatch = pt.match
		}
	case behaviorMergedWithNext:
		prevMatch := false
		for i := len(parts) - 1; i >= 0; i-- {
			pt := parts[i]
			if pt.match && !prevMatch && len(kept) > 0 {
				kept[len(kept)-1].start = pt.start
			} else {
				kept = append(kept, part{pt.start, pt.end, false})
			}
			prevMatch = pt.match
		}
		for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
			kept[i], kept[j] = kept[j], kept[i]
		}
	case behaviorContiguous:
		prevMatch := false
		for i, pt := range parts {
			if i > 0 && pt.match == prevMatch {
				kept[len(kept)-1].end = pt.end
			} else {
				kept = append(kept, part{pt.start, pt.end, false})
			}
			prevMatch = pt.match
		}
	}
	for _, k := range kept {
		if k.match || k.end == k.start {
			continue
		}
		out = append(out, piece{text: s[k.start:k.end], first: p.first && k.start == 0})
	}
	return out
}

// runePattern matches every single rune for which the predicate holds.
type runePattern func(rune) bool

func (rp runePattern) matches(s string, dst [][2]int) [][2]int {
	for i, r := range s {
		if rp(r) {
			dst = append(dst, [2]int{i, i + len(string(r))})
		}
	}
	return dst
}

// byteLevelPreTokenizer optionally adds a leading space and splits with the
// GPT-2 regex. The byte-to-character mapping happens in the model.
type byteLevelPreTokenizer struct {
	addPrefixSpace bool
	regex          pattern // nil when use_regex is false
}

func (bl byteLevelPreTokenizer) split(in []piece) []piece {
	if !bl.addPrefixSpace && bl.regex == nil {
		return in
	}
	out := make([]piece, 0, len(in))
	var spans [][2]int
	for _, p := range in {
		if bl.addPrefixSpace && !strings.HasPrefix(p.text, " ") {
			p.text = " " + p.text
		}
		if bl.regex == nil {
			if p.text != "" {
				out = append(out, p)
			}
			continue
		}
		if fast, ok := bl.regex.(isolatedSplitter); ok {
			out = fast.appendIsolated(p, out)
			continue
		}
		spans = bl.regex.matches(p.text, spans[:0])
		out = splitByMatches(p, spans, behaviorIsolated, false, out)
	}
	return out
}

// mappedByteLevel is a ByteLevel pre-tokenizer that other pre-tokenizers
// follow: it maps bytes to GPT-2 characters itself, and the model then
// works on characters.
type mappedByteLevel struct{ inner byteLevelPreTokenizer }

func (m mappedByteLevel) split(in []piece) []piece {
	out := m.inner.split(in) // may be in itself, which the caller lets us rewrite
	for i := range out {
		out[i].text = byteLevelEncode(out[i].text)
	}
	return out
}

// metaspace replaces spaces with the replacement character (▁), prepends it
// per prepend_scheme and optionally splits before each one.
type metaspace struct {
	replacement string
	scheme      string // "always", "first" or "never"
	splitWords  bool
}

func newMetaspace(j preTokenizerJSON) (preTokenizer, bool, error) {
	m := metaspace{replacement: j.Replacement, scheme: j.PrependScheme, splitWords: j.Split == nil || *j.Split}
	if m.replacement == "" {
		m.replacement = "▁"
	}
	if m.scheme == "" {
		m.scheme = "always"
		if j.AddPrefixSpace != nil && !*j.AddPrefixSpace {
			m.scheme = "never"
		}
	}
	switch m.scheme {
	case "always", "first", "never":
	default:
		return nil, false, &UnsupportedError{Component: "pre_tokenizer Metaspace prepend_scheme", Type: m.scheme}
	}
	return m, false, nil
}

func (m metaspace) split(in []piece) []piece {
	out := make([]piece, 0, len(in))
	var spans [][2]int
	for _, p := range in {
		p.text = strings.ReplaceAll(p.text, " ", m.replacement)
		if !strings.HasPrefix(p.text, m.replacement) && (m.scheme == "always" || (m.scheme == "first" && p.first)) {
			p.text = m.replacement + p.text
		}
		if !m.splitWords {
			if p.text != "" {
				out = append(out, p)
			}
			continue
		}
		spans = literalPattern(m.replacement).matches(p.text, spans[:0])
		out = splitByMatches(p, spans, behaviorMergedWithNext, false, out)
	}
	return out
}
