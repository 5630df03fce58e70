package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// EncodeSequenceLimit and EncodePairLimit give the library's encoding of every vector that
// fits, and refuse it with ErrTooLong at one token less.
func TestEncodeLimitsAgreeWithTheLibrary(t *testing.T) {
	for _, name := range encoderFixtures {
		t.Run(name, func(t *testing.T) {
			tok, err := Load(readTestdata(t, name+".tokenizer.json.gz"), nil)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(bytes.NewReader(readTestdata(t, name+".jsonl.gz")))
			sc.Buffer(nil, 1<<20)
			n := 0
			for sc.Scan() {
				var v encoderVector
				if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
					t.Fatal(err)
				}
				encode := func(max int) (Encoding, error) { return tok.EncodeSequenceLimit(v.Text, max) }
				want := v.IDsWithSpecial
				if v.B != nil {
					encode = func(max int) (Encoding, error) { return tok.EncodePairLimit(v.Text, *v.B, max) }
					want = v.IDs
				}
				e, err := encode(len(want))
				if err != nil || !slices.Equal(e.IDs, want) || !slices.Equal(e.TypeIDs, v.TypeIDs) || e.Truncated {
					t.Errorf("%q: %v %v %v, want %v %v", v.Text, e.IDs, e.TypeIDs, err, want, v.TypeIDs)
				}
				if len(want) > tok.post.count(v.B != nil) {
					if _, err := encode(len(want) - 1); !errors.Is(err, ErrTooLong) {
						t.Errorf("%q at %d tokens: %v, want ErrTooLong", v.Text, len(want)-1, err)
					}
				}
				n++
			}
			if n < 100 {
				t.Errorf("%d vectors", n)
			}
		})
	}
}
