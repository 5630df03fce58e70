package grammar

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"testing"
)

func TestGBNF(t *testing.T) {
	v := toyVocab()
	for _, c := range []struct {
		src  string
		want string // a regexp every output must match
	}{
		{`root ::= "yes" | "no"`, `^(yes|no)$`},
		{"# a comment\nroot ::= greeting \" \" name\ngreeting ::= (\"hi\" | \"hello\")\nname ::= [A-Z] [a-z]{1,5}", `^(hi|hello) [A-Z][a-z]{1,5}$`},
		{`root ::= [^"\\\n]{1,20} "\n"`, `^[^"\\\n]{1,20}\n$`},
		{"root ::= item (\",\" item)*\nitem ::= [0-9]+ | \"x\"\n  | \"\\u00e9\"", `^([0-9]+|x|é)(,([0-9]+|x|é))*$`},
		{`root ::= "(" expr ")"` + "\nexpr ::= term ([-+] term)*\nterm ::= [0-9] | \"(\" expr \")\"", `^\([-+()0-9]*\)$`},
	} {
		g, err := ParseGBNF(c.src)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		re := regexp.MustCompile(c.want)
		for seed := uint64(0); seed < 20; seed++ {
			out := generate(t, g, v, rand.New(rand.NewPCG(seed, 5)), 300)
			if !re.Match(out) {
				t.Fatalf("%q seed %d: %q does not match %s", c.src, seed, out, c.want)
			}
		}
	}
	for _, src := range []string{
		`start ::= "a"`,
		`root ::= other`,
		`root ::= "a`,
		`root ::= [a-`,
		`root ::= "a"{2,1}`,
		`root ::= "a" "b"` + "\nroot ::= \"c\"",
		`root = "a"`,
	} {
		var ge *GBNFError
		if _, err := ParseGBNF(src); !errors.As(err, &ge) {
			t.Errorf("%q: %v, want a GBNFError", src, err)
		}
	}
	if _, err := ParseGBNF(`root ::= "a" root`); !errors.Is(err, ErrNoEnd) {
		t.Errorf("endless recursion: %v", err)
	}
}
