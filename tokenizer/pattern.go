package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// patternJSON is the {"String": ...} or {"Regex": ...} of Split and Replace.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// pattern finds non-overlapping matches left to right.
type pattern interface {
	// matches appends the [start, end) byte spans of all matches in s.
	matches(s string, dst [][2]int) [][2]int
}

func (p patternJSON) compile(where string) (pattern, error) {
	switch {
	case p.String != nil:
		if *p.String == "" {
			return nil, invalidf("%s: empty string pattern", where)
		}
		return literalPattern(*p.String), nil
	case p.Regex != nil:
		return compileRegex(*p.Regex, where)
	}
	return nil, invalidf("%s: pattern has neither String nor Regex", where)
}

func compileRegex(expr, where string) (pattern, error) {
	if fast, ok := knownSplitPatterns[expr]; ok {
		return fast, nil
	}
	re, err := regexp2.Compile(expr, regexp2.None)
	if err != nil {
		return nil, invalidf("%s: regex %q: %v", where, expr, err)
	}
	re.MatchTimeout = regexTimeout
	return regexPattern{re}, nil
}

// regexTimeout bounds one match of a regex of the tokenizer file: a
// backtracking engine takes exponential time on some expressions ((a|aa)+b
// on 40 a's: hours; on 32, 12 s), and tokenizing cannot be cancelled. Real
// tokenizers' matches take microseconds.
const regexTimeout = time.Second

// ErrRegexTimeout is wrapped by the error of Load, Encode, EncodeLimit,
// Decode and a Stream when a regular expression of the tokenizer file
// matched for longer than a second (catastrophic backtracking).
var ErrRegexTimeout = errors.New("tokenizer: a regular expression of tokenizer.json ran too long")

// regexPanic carries a regex timeout out of the pattern code, which has no
// error results, to the exported method that catches it (catchRegex).
type regexPanic struct{ err error }

// catchRegex, deferred by every exported method that may run a regex,
// turns a regexPanic into *err.
func catchRegex(err *error) {
	if r := recover(); r != nil {
		p, ok := r.(regexPanic)
		if !ok {
			panic(r)
		}
		*err = fmt.Errorf("%w: %v", ErrRegexTimeout, p.err)
	}
}

type literalPattern string

func (p literalPattern) matches(s string, dst [][2]int) [][2]int {
	off := 0
	for {
		i := strings.Index(s[off:], string(p))
		if i < 0 {
			return dst
		}
		dst = append(dst, [2]int{off + i, off + i + len(p)})
		off += i + len(p)
	}
}

// regexPattern runs a regex with look-around through regexp2 (a backtracking
// engine like the Oniguruma one Hugging Face uses).
type regexPattern struct{ re *regexp2.Regexp }

func (p regexPattern) matches(s string, dst [][2]int) [][2]int {
	runes := []rune(s)
	// byteAt[i] is the byte offset of rune i; s is valid UTF-8 here.
	byteAt := make([]int, len(runes)+1)
	off := 0
	for i, r := range runes {
		byteAt[i] = off
		off += utf8.RuneLen(r)
	}
	byteAt[len(runes)] = off
	m, err := p.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		dst = append(dst, [2]int{byteAt[m.Index], byteAt[m.Index+m.Length]})
		m, err = p.re.FindNextMatch(m)
	}
	if err != nil {
		panic(regexPanic{err}) // caught by catchRegex
	}
	return dst
}

// replaceAll replaces every match of p in s with content.
func replaceAll(p pattern, s, content string) string {
	switch p := p.(type) {
	case literalPattern:
		return strings.ReplaceAll(s, string(p), content)
	case spaceRuns:
		return p.replaceAll(s, content)
	}
	spans := p.matches(s, nil)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp[0]])
		b.WriteString(content)
		prev = sp[1]
	}
	b.WriteString(s[prev:])
	return b.String()
}
