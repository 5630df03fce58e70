package sample

import (
	"errors"
	"strings"
	"testing"
)

func TestStopMatcher(t *testing.T) {
	tests := []struct {
		name    string
		stops   []string
		pieces  []string
		emits   []string // what each Push returns
		stopAt  int      // index of the piece where stopped becomes true, -1 if never
		flush   string
		matched string
	}{
		{
			name: "no stops passes through", stops: nil,
			pieces: []string{"a", "b<"}, emits: []string{"a", "b<"}, stopAt: -1,
		},
		{
			name: "stop inside one piece", stops: []string{"</s>"},
			pieces: []string{"hello</s>world"}, emits: []string{"hello"}, stopAt: 0, matched: "</s>",
		},
		{
			name: "stop split across pieces is held back", stops: []string{"</s>"},
			pieces: []string{"hi<", "/", "s>", "more"}, emits: []string{"hi", "", "", ""}, stopAt: 2, matched: "</s>",
		},
		{
			name: "false alarm releases held text", stops: []string{"</s>"},
			pieces: []string{"a<", "/x", "y"}, emits: []string{"a", "</x", "y"}, stopAt: -1,
		},
		{
			name: "held text is flushed at the end", stops: []string{"STOP"},
			pieces: []string{"go ST"}, emits: []string{"go "}, stopAt: -1, flush: "ST",
		},
		{
			name: "earliest of several stops wins", stops: []string{"world", "lo w"},
			pieces: []string{"hello world"}, emits: []string{"hel"}, stopAt: 0, matched: "lo w",
		},
		{
			name: "longer stop wins at the same position", stops: []string{"ab", "abc"},
			pieces: []string{"xabc"}, emits: []string{"x"}, stopAt: 0, matched: "abc",
		},
		{
			name: "hold back the longest possible prefix", stops: []string{"aab"},
			pieces: []string{"xaa", "a", "b"}, emits: []string{"x", "a", ""}, stopAt: 2, matched: "aab",
		},
		{
			name: "overlapping stop candidates", stops: []string{"<|im_end|>", "<|endoftext|>"},
			pieces: []string{"ok<|", "im_", "end|>tail"}, emits: []string{"ok", "", ""}, stopAt: 2, matched: "<|im_end|>",
		},
		{
			name: "multibyte text", stops: []string{"。"},
			pieces: []string{"你好", "\xe3\x80", "\x82再见"}, emits: []string{"你好", "", ""}, stopAt: 2, matched: "。",
		},
		{
			name: "after stop everything is dropped", stops: []string{"x"},
			pieces: []string{"x", "abc"}, emits: []string{"", ""}, stopAt: 0, matched: "x",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewStopMatcher(tc.stops)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range tc.pieces {
				emit, stopped := m.Push(p)
				if emit != tc.emits[i] {
					t.Errorf("piece %d %q: emitted %q, want %q", i, p, emit, tc.emits[i])
				}
				wantStopped := tc.stopAt >= 0 && i >= tc.stopAt
				if stopped != wantStopped {
					t.Errorf("piece %d %q: stopped = %v, want %v", i, p, stopped, wantStopped)
				}
			}
			if got := m.Flush(); got != tc.flush {
				t.Errorf("Flush() = %q, want %q", got, tc.flush)
			}
			if got, _ := m.Stopped(); got != tc.matched {
				t.Errorf("Stopped() = %q, want %q", got, tc.matched)
			}
		})
	}
}

// TestStopMatcherAnySplitting checks, for every way of cutting a text into
// two or three pieces, that the emitted text is the text up to the first
// stop string and nothing of the stop string leaks.
func TestStopMatcherAnySplitting(t *testing.T) {
	stops := []string{"<end>", "<eot>", "##"}
	texts := map[string]string{
		"abc <en d <end> tail": "abc <en d ",
		"<e<eo<eot>":           "<e<eo",
		"# #a#":                "# #a#",
		"x##":                  "x",
		"<end":                 "<end",
	}
	for text, want := range texts {
		for i := 0; i <= len(text); i++ {
			for j := i; j <= len(text); j++ {
				m, _ := NewStopMatcher(stops)
				var out strings.Builder
				stopped := false
				for _, p := range []string{text[:i], text[i:j], text[j:]} {
					e, s := m.Push(p)
					out.WriteString(e)
					stopped = s
				}
				if !stopped {
					out.WriteString(m.Flush())
				}
				if out.String() != want {
					t.Fatalf("%q split at %d,%d: emitted %q, want %q", text, i, j, out.String(), want)
				}
			}
		}
	}
}

func TestStopMatcherRejectsEmptyStop(t *testing.T) {
	if _, err := NewStopMatcher([]string{"ok", ""}); !errors.Is(err, ErrEmptyStop) {
		t.Errorf("NewStopMatcher with an empty stop: err = %v, want ErrEmptyStop", err)
	}
}

func TestStopMatcherReset(t *testing.T) {
	m, _ := NewStopMatcher([]string{"!"})
	m.Push("a!")
	m.Reset()
	if e, s := m.Push("b"); e != "b" || s {
		t.Errorf("after Reset, Push(\"b\") = %q, %v; want \"b\", false", e, s)
	}
}
