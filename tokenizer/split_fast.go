package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The split regexes of GPT-2, Llama 3 and Qwen 2/3 are matched by hand: they
// dominate encode time and a backtracking engine is ~10× slower. Each
// scanner is tested against regexp2 running the original expression.
const (
	gpt2Regex   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	llama3Regex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Regex  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

var knownSplitPatterns = map[string]pattern{
	gpt2Regex:   gpt2Scanner{},
	llama3Regex: llama3Scanner{maxDigits: 3},
	qwen2Regex:  llama3Scanner{maxDigits: 1},
	spacesRegex: spaceRuns{},
}

// spacesRegex is the Replace normalizer of SentencePiece-converted
// tokenizers (XLM-R and its kin) that collapses runs of spaces. regexp2
// allocates a match object per run: 5 MB of tab-separated words cost 780 MB.
const spacesRegex = ` {2,}`

// spaceRuns matches runs of two or more ' ' (spacesRegex).
type spaceRuns struct{}

func (spaceRuns) matches(s string, dst [][2]int) [][2]int {
	for i := 0; ; {
		start, end := nextSpaceRun(s, i)
		if start < 0 {
			return dst
		}
		dst = append(dst, [2]int{start, end})
		i = end
	}
}

// replaceAll is replaceAll(spaceRuns{}, s, content) without a list of spans.
func (spaceRuns) replaceAll(s, content string) string {
	start, end := nextSpaceRun(s, 0)
	if start < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	prev := 0
	for ; start >= 0; start, end = nextSpaceRun(s, end) {
		b.WriteString(s[prev:start])
		b.WriteString(content)
		prev = end
	}
	b.WriteString(s[prev:])
	return b.String()
}

// nextSpaceRun returns the first run of two or more spaces at or after i,
// or -1, -1.
func nextSpaceRun(s string, i int) (start, end int) {
	k := strings.Index(s[i:], "  ")
	if k < 0 {
		return -1, -1
	}
	start, end = i+k, i+k+2
	for end < len(s) && s[end] == ' ' {
		end++
	}
	return start, end
}

type runeClass uint8

const (
	classOther runeClass = iota // not \s, \p{L} or \p{N}
	classLetter
	classNumber
	classSpace
)

var asciiClass = func() (t [utf8.RuneSelf]runeClass) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			t[r] = classLetter
		case r >= '0' && r <= '9':
			t[r] = classNumber
		case isWhiteSpace(r):
			t[r] = classSpace
		}
	}
	return t
}()

// classAt returns the class and byte length of the rune at s[i].
func classAt(s string, i int) (runeClass, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return classLetter, n
	case unicode.IsNumber(r):
		return classNumber, n
	case isWhiteSpace(r):
		return classSpace, n
	}
	return classOther, n
}

// skipClass returns the end of the run of class c starting at s[i].
func skipClass(s string, i int, c runeClass) int {
	for i < len(s) {
		ci, n := classAt(s, i)
		if ci != c {
			break
		}
		i += n
	}
	return i
}

// contraction returns the byte length of 's 't 're 've 'm 'll 'd at s[i]
// (which must be '\”), or 0.
func contraction(s string, i int, fold bool) int {
	lower := func(j int) byte {
		if j >= len(s) {
			return 0
		}
		c := s[j]
		if fold && c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		return c
	}
	switch lower(i + 1) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if lower(i+2) == 'e' {
			return 3
		}
	case 'l':
		if lower(i+2) == 'l' {
			return 3
		}
	}
	return 0
}

// whitespaceEnd implements \s+(?!\S)|\s+ at s[i] (a space): the run minus its
// last character if a non-space follows and the run is longer than one.
func whitespaceEnd(s string, i int) int {
	end, last := i, i
	for end < len(s) {
		c, n := classAt(s, end)
		if c != classSpace {
			break
		}
		last = end
		end += n
	}
	if end < len(s) && last > i {
		return last
	}
	return end
}

type gpt2Scanner struct{}

func (gpt2Scanner) appendIsolated(p piece, out []piece) []piece {
	s := p.text
	for i := 0; i < len(s); {
		end := gpt2Scanner{}.matchAt(s, i)
		out = append(out, piece{text: s[i:end], first: p.first && i == 0})
		i = end
	}
	return out
}

func (gpt2Scanner) matches(s string, dst [][2]int) [][2]int {
	for i := 0; i < len(s); {
		end := gpt2Scanner{}.matchAt(s, i)
		dst = append(dst, [2]int{i, end})
		i = end
	}
	return dst
}

func (gpt2Scanner) matchAt(s string, i int) int {
	if s[i] == '\'' {
		if n := contraction(s, i, false); n > 0 {
			return i + n
		}
	}
	c, n := classAt(s, i)
	j := i
	if s[i] == ' ' && i+1 < len(s) {
		if c1, n1 := classAt(s, i+1); c1 != classSpace {
			c, n, j = c1, n1, i+1
		}
	}
	if c == classSpace {
		return whitespaceEnd(s, i)
	}
	return skipClass(s, j+n, c)
}

// llama3Scanner matches llama3Regex (maxDigits 3) and qwen2Regex (1).
type llama3Scanner struct{ maxDigits int }

func (sc llama3Scanner) appendIsolated(p piece, out []piece) []piece {
	s := p.text
	for i := 0; i < len(s); {
		end := sc.matchAt(s, i)
		out = append(out, piece{text: s[i:end], first: p.first && i == 0})
		i = end
	}
	return out
}

func (sc llama3Scanner) matches(s string, dst [][2]int) [][2]int {
	for i := 0; i < len(s); {
		end := sc.matchAt(s, i)
		dst = append(dst, [2]int{i, end})
		i = end
	}
	return dst
}

func (sc llama3Scanner) matchAt(s string, i int) int {
	if s[i] == '\'' {
		if n := contraction(s, i, true); n > 0 {
			return i + n
		}
	}
	c, n := classAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c == classLetter {
		return skipClass(s, i+n, classLetter)
	}
	if c != classNumber && s[i] != '\r' && s[i] != '\n' && i+n < len(s) {
		if c1, n1 := classAt(s, i+n); c1 == classLetter {
			return skipClass(s, i+n+n1, classLetter)
		}
	}
	// \p{N}{1,max}
	if c == classNumber {
		j := i + n
		for k := 1; k < sc.maxDigits && j < len(s); k++ {
			cj, nj := classAt(s, j)
			if cj != classNumber {
				break
			}
			j += nj
		}
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	j := -1
	if c == classOther {
		j = i + n
	} else if s[i] == ' ' && i+1 < len(s) {
		if c1, n1 := classAt(s, i+1); c1 == classOther {
			j = i + 1 + n1
		}
	}
	if j >= 0 {
		j = skipClass(s, j, classOther)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// c is a space: \s*[\r\n]+ ends after the run's last line break.
	end, lastNL := i, -1
	for end < len(s) {
		ce, ne := classAt(s, end)
		if ce != classSpace {
			break
		}
		if s[end] == '\r' || s[end] == '\n' {
			lastNL = end
		}
		end += ne
	}
	if lastNL >= 0 {
		return lastNL + 1
	}
	return whitespaceEnd(s, i)
}
