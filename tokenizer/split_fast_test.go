package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/google/go-cmp/cmp"
)

// scannerCases pairs each hand-written scanner with the regex it replaces.
var scannerCases = []struct {
	name  string
	regex string
	fast  pattern
}{
	{"gpt2", gpt2Regex, gpt2Scanner{}},
	{"llama3", llama3Regex, llama3Scanner{maxDigits: 3}},
	{"qwen2", qwen2Regex, llama3Scanner{maxDigits: 1}},
	{"spaces", spacesRegex, spaceRuns{}},
}

// splitAlphabet mixes every character class the regexes distinguish:
// letters (ASCII, accented, CJK, combining marks are \p{M} so "other"),
// digits (ASCII and others), all kinds of spaces and line breaks,
// apostrophes, punctuation, symbols and emoji.
var splitAlphabet = []rune("aAzZ'sStTrReEvVmMlLdD019٣½ \t\n\r\v\f\u00a0\u2003\u3000\u0085\u2028" +
	".,!?-_$#@~()[]{}\"/\\é日本語한\u0301\u200d😀🤗✨")

func randomSplitText(r *rand.Rand) string {
	var b strings.Builder
	for n := r.IntN(24); n >= 0; n-- {
		b.WriteRune(splitAlphabet[r.IntN(len(splitAlphabet))])
	}
	return b.String()
}

func regexSpans(t testing.TB, re *regexp2.Regexp, s string) [][2]int {
	t.Helper()
	return regexPattern{re}.matches(s, nil)
}

// TestScannersMatchRegexp2 checks that each hand-written split scanner
// finds exactly the matches of its regex run by regexp2, on fixture strings
// and on random strings over an adversarial alphabet.
func TestScannersMatchRegexp2(t *testing.T) {
	var texts []string
	for _, name := range fixtureNames {
		for _, v := range fixtureVectors(t, name) {
			texts = append(texts, v.Text)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		texts = append(texts, randomSplitText(r))
	}
	for _, sc := range scannerCases {
		t.Run(sc.name, func(t *testing.T) {
			re := regexp2.MustCompile(sc.regex, regexp2.None)
			for _, s := range texts {
				want := regexSpans(t, re, s)
				got := sc.fast.matches(s, nil)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("%q: spans (-regexp2 +scanner):\n%s", s, diff)
				}
			}
		})
	}
}

func FuzzScannersMatchRegexp2(f *testing.F) {
	for _, s := range []string{"Hello world", "  'll\n\n x", "a\u00a0 \t\nb", "123456 7", "日本語 テキスト"} {
		f.Add(s)
	}
	res := make([]*regexp2.Regexp, len(scannerCases))
	for i, sc := range scannerCases {
		res[i] = regexp2.MustCompile(sc.regex, regexp2.None)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // Encode makes input valid before splitting
		}
		for i, sc := range scannerCases {
			if diff := cmp.Diff(regexSpans(t, res[i], s), sc.fast.matches(s, nil)); diff != "" {
				t.Fatalf("%s %q: spans (-regexp2 +scanner):\n%s", sc.name, s, diff)
			}
		}
	})
}

// The space-run replacement gives what replacing regexp2's matches gives.
func TestSpaceRunsReplaceAsTheRegex(t *testing.T) {
	re := regexPattern{regexp2.MustCompile(spacesRegex, regexp2.None)}
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		s := randomSplitText(r)
		if r.IntN(2) == 0 {
			s = strings.ReplaceAll(s, "\t", "   ")
		}
		if got, want := replaceAll(spaceRuns{}, s, " "), replaceAll(re, s, " "); got != want {
			t.Fatalf("%q: %q, regexp2 gives %q", s, got, want)
		}
	}
}
