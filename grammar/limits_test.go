package grammar

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func compiler(t testing.TB, lim Limits) *Compiler {
	t.Helper()
	c, err := NewCompiler(context.Background(), lim)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantLimit fails unless err is a *LimitError of the named limit.
func wantLimit(t *testing.T, what string, err error, limit string) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != limit || !errors.Is(err, ErrTooLarge) {
		t.Errorf("%s: %v; want a *LimitError of %s", what, err, limit)
	}
}

// TestDeepNestingIsAnErrorNotACrash is the regression test for a few MB of nested
// parentheses overflowing the GBNF parser's stack (fatal error: stack overflow, exit 2):
// every recursive parser bounds its nesting, and deep input is a typed error.
func TestDeepNestingIsAnErrorNotACrash(t *testing.T) {
	const deep = 1 << 20
	rules := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "r%d ::= r%d\n", i, i+1)
		}
		fmt.Fprintf(&b, "r%d ::= \"x\"\nroot ::= r0\n", n)
		return b.String()
	}
	defs := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
		for i := range n {
			fmt.Fprintf(&b, `"d%d":{"$ref":"#/$defs/d%d"},`, i, i+1)
		}
		fmt.Fprintf(&b, `"d%d":{"type":"string"}}}`, n)
		return b.String()
	}
	for _, c := range []struct {
		name, src string
		gbnf      bool
		limit     string
	}{
		{"gbnf groups", "root ::= " + strings.Repeat("(", deep) + `"a"` + strings.Repeat(")", deep), true, "MaxDepth"},
		{"gbnf rule chain", rules(20000), true, "MaxDepth"},
		{"schema items", strings.Repeat(`{"type":"array","items":`, deep/16) + `{}` + strings.Repeat("}", deep/16), false, "MaxDepth"},
		{"schema const", `{"const":` + strings.Repeat("[", deep) + strings.Repeat("]", deep) + `}`, false, "MaxDepth"},
		{"schema anyOf", strings.Repeat(`{"anyOf":[`, deep/16) + `{}` + strings.Repeat("]}", deep/16), false, "MaxDepth"},
		{"schema $ref chain", defs(5000), false, "MaxDepth"},
		{"pattern groups", `{"type":"string","pattern":"` + strings.Repeat("(", 300) + "a" + strings.Repeat(")", 300) + `"}`, false, "MaxDepth"},
	} {
		var err error
		alloc := allocated(func() {
			if c.gbnf {
				_, err = compiler(t, Limits{Timeout: time.Minute}).GBNF(c.src)
			} else {
				_, err = compiler(t, Limits{Timeout: time.Minute}).JSONSchema([]byte(c.src))
			}
		})
		wantLimit(t, c.name, err, c.limit)
		if max := uint64(len(c.src))*8 + 64<<20; alloc > max {
			t.Errorf("%s: %d bytes of input allocated %d bytes (more than %d)", c.name, len(c.src), alloc, max)
		}
	}
	// Within the limit, nesting works.
	if _, err := ParseGBNF("root ::= " + strings.Repeat("(", 200) + `"a"` + strings.Repeat(")", 200)); err != nil {
		t.Errorf("200 nested groups: %v", err)
	}
}

// TestBudgetsApplyAsTheWorkGrows is the regression test for grammars that built gigabytes
// before a limit was checked: each budget stops the work when it is reached, and what was
// allocated stays near the budget.
func TestBudgetsApplyAsTheWorkGrows(t *testing.T) {
	doubling := func(n int) string { // r0 ::= r1 r1, r1 ::= r2 r2, …: 2^n copies once expanded
		var b strings.Builder
		b.WriteString("root ::= r0\n")
		for i := range n {
			fmt.Fprintf(&b, "r%d ::= r%d r%d\n", i, i+1, i+1)
		}
		fmt.Fprintf(&b, "r%d ::= \"ab\"\n", n)
		return b.String()
	}
	manyEnums := `{"enum":[` + strings.Repeat(`{},`, 300000) + `{}]}`
	lim := Limits{MaxNodes: 1 << 16, MaxStates: 1 << 18, Timeout: time.Minute} // the budgets, not the clock, must stop these
	for _, c := range []struct {
		name, src string
		gbnf      bool
		limit     string
	}{
		{"gbnf doubling rules", doubling(40), true, "MaxStates"},
		{"gbnf nested repeats", `root ::= (("a"{1000}){1000}){1000}`, true, "MaxStates"},
		{"gbnf many items", "root ::= " + strings.Repeat(`"a" `, 1<<18), true, "MaxNodes"},
		{"pattern long repeats", `{"type":"string","pattern":"^.{1000}.{1000}.{1000}$"}`, false, "MaxStates"},
		{"schema many values", manyEnums, false, "MaxNodes"},
		{"schema long arrays of objects", `{"type":"array","maxItems":10000,"items":{"type":"object","properties":{"a":{"type":"string","maxLength":1000}}}}`, false, "MaxStates"},
	} {
		var err error
		alloc := allocated(func() {
			if c.gbnf {
				_, err = compiler(t, lim).GBNF(c.src)
			} else {
				_, err = compiler(t, lim).JSONSchema([]byte(c.src))
			}
		})
		wantLimit(t, c.name, err, c.limit)
		if max := uint64(len(c.src))*16 + uint64(2*lim.CompileBytes()); alloc > max {
			t.Errorf("%s: allocated %d bytes, more than %d", c.name, alloc, max)
		}
	}
}

// TestManyOptionalPropertiesStayLinear is the regression test for a schema of a few
// thousand optional properties building O(N²) nodes (80 KB → 3.7 GB): the automaton is
// linear in the properties, and it still generates valid objects in schema order.
func TestManyOptionalPropertiesStayLinear(t *testing.T) {
	usage := func(n int) Usage {
		var b strings.Builder
		b.WriteString(`{"type":"object","properties":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":{"type":"integer"}`, i)
		}
		b.WriteString(`}}`)
		c := compiler(t, Limits{})
		if _, err := c.JSONSchema([]byte(b.String())); err != nil {
			t.Fatalf("%d properties: %v", n, err)
		}
		return c.Usage()
	}
	small, large := usage(250), usage(2000)
	if large.States > 9*small.States || large.Nodes > 9*small.Nodes {
		t.Errorf("8× the properties cost %d→%d states, %d→%d nodes: not linear", small.States, large.States, small.Nodes, large.Nodes)
	}
	v := toyVocab()
	schema := `{"type":"object","properties":{"a":{"const":1},"b":{"const":2},"c":{"const":3},"d":{"const":4}},"required":["c"]}`
	g, err := FromJSONSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^\{("a": ?1, ?)?("b": ?2, ?)?"c": ?3(, ?"d": ?4)?\}$`)
	seen := map[string]bool{}
	for seed := uint64(0); seed < 200; seed++ {
		out := generate(t, g, v, rand.New(rand.NewPCG(seed, 9)), 100)
		if !re.Match(out) {
			t.Fatalf("seed %d: %s is not the members in order", seed, out)
		}
		seen[strings.ReplaceAll(string(out), " ", "")] = true
	}
	if len(seen) != 8 {
		t.Errorf("%d distinct objects generated, want all 8: %v", len(seen), seen)
	}
}

// TestCompileStopsWithItsContextAndClock: the loops check the context and the clock as they
// go (a context that ends after a few checks stops the work with its error).
func TestCompileStopsWithItsContextAndClock(t *testing.T) {
	big := `root ::= ("a"{1000}){1000}`
	ctx := &endingContext{Context: context.Background(), after: 3}
	c, _ := NewCompiler(ctx, Limits{})
	if _, err := c.GBNF(big); !errors.Is(err, context.Canceled) {
		t.Errorf("context ended during compile: %v", err)
	}
	if ctx.calls > 4 {
		t.Errorf("the context was read %d times after it ended", ctx.calls)
	}
	c, _ = NewCompiler(context.Background(), Limits{Timeout: time.Nanosecond})
	time.Sleep(time.Millisecond)
	_, err := c.GBNF(big)
	wantLimit(t, "timeout", err, "Timeout")
	// A negated class of many ranges is range arithmetic, not a walk over every code point
	// for every range (1 MB of ranges took ~18 min of a core): it compiles, or is past a
	// budget, at once.
	negated := func(n int) string {
		var b strings.Builder
		b.WriteString("root ::= [^")
		for r := rune(0x100); r < 0x100+2*rune(n); r += 2 {
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		b.WriteString("]")
		return b.String()
	}
	if _, err := compiler(t, Limits{Timeout: time.Minute}).GBNF(negated(10000)); err != nil {
		t.Errorf("negated class of 10000 code points: %v", err)
	}
	_, err = compiler(t, Limits{Timeout: time.Minute}).GBNF(negated(100000))
	wantLimit(t, "negated class of 100000 code points", err, "MaxNodes")
}

// endingContext ends after its Err has been read `after` times.
type endingContext struct {
	context.Context
	after, calls int
}

func (c *endingContext) Err() error {
	c.calls++
	if c.calls > c.after {
		return context.Canceled
	}
	return nil
}

func TestComplementRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		var pairs []rune
		for range rng.IntN(6) {
			lo := rune(rng.IntN(0x120))
			if rng.IntN(4) == 0 {
				lo = rune(rng.IntN(utf8.MaxRune))
			}
			pairs = append(pairs, lo, min(lo+rune(rng.IntN(40)), utf8.MaxRune))
		}
		got := complementRanges(pairs)
		in := func(set []rune, r rune) bool {
			for k := 0; k < len(set); k += 2 {
				if set[k] <= r && r <= set[k+1] {
					return true
				}
			}
			return false
		}
		// Every boundary of either set, and its neighbours, then random code points.
		probes := []rune{0, utf8.MaxRune}
		for _, r := range append(slices.Clone(pairs), got...) {
			probes = append(probes, r-1, r, r+1)
		}
		for range 2000 {
			probes = append(probes, rune(rng.IntN(utf8.MaxRune+1)))
		}
		for _, r := range probes {
			if r >= 0 && r <= utf8.MaxRune && in(got, r) == in(pairs, r) {
				t.Fatalf("case %d %v: complement %v wrong at %#x", i, pairs, got, r)
			}
		}
		for k := 2; k < len(got); k += 2 {
			if got[k] <= got[k-1]+1 {
				t.Fatalf("case %d: complement %v not sorted and apart", i, got)
			}
		}
	}
}

// TestDFACacheStaysBoundedWhileMatching is the regression test for a wildcard followed by
// a bounded repeat creating DFA states without end during generation (6 GB in 34 s): the
// cache is emptied when it reaches MaxDFABytes, and a mask that needs more than a whole
// cache stops the matcher with a *LimitError.
func TestDFACacheStaysBoundedWhileMatching(t *testing.T) {
	v := toyVocab()
	lim := Limits{MaxDFABytes: 256 << 10, MaxMaskBytes: 64 << 10}
	c := compiler(t, lim)
	// After any text, 'a' then exactly 20 more characters: the DFA must remember which of the
	// last 21 characters were 'a' (2^21 states).
	g, err := c.JSONSchema([]byte(`{"type":"string","pattern":"a.{20}$"}`))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	m := g.NewMatcher(v)
	mask := make([]uint64, v.MaskWords())
	if err := m.Accept('"'); err != nil {
		t.Fatal(err)
	}
	var peak int64
	for step := 0; step < 400 && m.Err() == nil; step++ {
		m.FillMask(mask)
		peak = max(peak, g.dfa.bytes)
		var allowed []int
		for id := 0; id < v.Size(); id++ {
			if mask[id>>6]>>(id&63)&1 != 0 && !v.isEOS(id) {
				allowed = append(allowed, id)
			}
		}
		if m.Err() != nil {
			break
		}
		// Mostly 'a' and 'b', so that the set of recent 'a's keeps changing.
		id := int('a' + rng.IntN(2))
		if err := m.Accept(id); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	if peak > lim.MaxDFABytes {
		t.Errorf("the DFA held %d bytes, more than MaxDFABytes %d", peak, lim.MaxDFABytes)
	}
	if g.dfa.flushes == 0 {
		t.Errorf("the DFA was never emptied: the test does not reach the limit")
	}
	if g.maskBytes > lim.MaxMaskBytes {
		t.Errorf("the masks hold %d bytes, more than MaxMaskBytes %d", g.maskBytes, lim.MaxMaskBytes)
	}
	if err := m.Err(); err != nil {
		wantLimit(t, "matcher", err, "MaxDFABytes")
	}
	// A mask that needs more states than the whole cache is a typed error, not a stall.
	tiny := compiler(t, Limits{MaxDFABytes: 8 << 10})
	g, err = tiny.JSONSchema([]byte(`{"type":"string","pattern":"a.{20}$"}`))
	if err != nil {
		t.Fatal(err)
	}
	m = g.NewMatcher(v)
	for _, b := range `"aabababbbaabab` {
		m.FillMask(mask)
		if m.Err() != nil {
			break
		}
		m.Accept(int(b))
	}
	m.FillMask(mask)
	wantLimit(t, "tiny cache", m.Err(), "MaxDFABytes")
	for _, w := range mask {
		if w != 0 {
			t.Fatal("a matcher that stopped still allows tokens")
		}
	}
	if err := m.Accept('a'); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Accept after the error: %v", err)
	}
	// A cancelled context stops the mask.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m = g.NewMatcherContext(ctx, v)
	m.FillMask(mask)
	if !errors.Is(m.Err(), context.Canceled) {
		t.Errorf("cancelled matcher: %v", m.Err())
	}
}

// TestWideIntegerRangesAreSmall is the regression test for integer bounds built by a split
// that doubled per digit (±999999999999999 was refused as too large; wide ranges cost ~1 s
// and 220 MB): ranges are built digit by digit, linear in the digits.
func TestWideIntegerRangesAreSmall(t *testing.T) {
	for _, bounds := range []string{
		`"minimum":-999999999999999,"maximum":999999999999999`,
		`"minimum":-1e15,"maximum":1e15`,
		`"minimum":123456789012345,"maximum":987654321098765`,
		`"exclusiveMinimum":-999999999999999.5`,
	} {
		c := compiler(t, Limits{})
		var err error
		alloc := allocated(func() { _, err = c.JSONSchema([]byte(`{"type":"integer",` + bounds + `}`)) })
		if err != nil {
			t.Errorf("%s: %v", bounds, err)
			continue
		}
		if u := c.Usage(); u.States > 5000 || alloc > 4<<20 {
			t.Errorf("%s: %d states, %d nodes, %d bytes allocated", bounds, u.States, u.Nodes, alloc)
		}
	}
}

// accepts reports whether g's language holds s.
func accepts(g *Grammar, s string) bool {
	st := g.dfa.start
	for i := 0; i < len(s); i++ {
		st = g.dfa.step(st, s[i])
	}
	return st.accept
}

func TestIntegerRangesHoldExactlyTheirIntegers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		lo := rng.Int64N(40000) - 20000
		hi := lo + rng.Int64N(30000)
		if rng.IntN(3) == 0 {
			hi = lo + rng.Int64N(30)
		}
		g, err := FromJSONSchema([]byte(fmt.Sprintf(`{"type":"integer","minimum":%d,"maximum":%d}`, lo, hi)))
		if err != nil {
			t.Fatal(err)
		}
		for range 200 {
			n := lo - 100 + rng.Int64N(hi-lo+200)
			if got, want := accepts(g, strconv.FormatInt(n, 10)), lo <= n && n <= hi; got != want {
				t.Fatalf("[%d, %d]: %d accepted %v", lo, hi, n, got)
			}
		}
		for _, s := range []string{"-0", "00", "01", "-01", "", "-"} {
			if accepts(g, s) && !(s == "-0" && lo <= 0 && hi >= 0) {
				t.Fatalf("[%d, %d]: %q accepted", lo, hi, s)
			}
		}
	}
}

// TestMaskWorkIsBounded is the regression test for a GBNF grammar whose DFA states each
// close over long chains of empty steps (("" ){1000}){100} between characters: every new
// DFA state visited ~800,000 NFA states, so that each token's mask took 2-5 s of a core
// for the whole generation while staying inside MaxDFABytes. The work of one mask is now
// bounded by MaxMaskWork, and past it the match stops with a typed error.
func TestMaskWorkIsBounded(t *testing.T) {
	v := toyVocab()
	src := "root ::= [a-z]* \"a\" e [a-z] e [a-z] e [a-z] e [a-z] e [a-z] e [a-z] e [a-z] e [a-z]\n" +
		"e ::= (\"\"{1000}){100}\n"
	lim := Limits{MaxMaskWork: 1 << 22}
	g, err := compiler(t, lim).GBNF(src)
	if err != nil {
		t.Fatal(err)
	}
	m := g.NewMatcher(v)
	mask := make([]uint64, v.MaskWords())
	for _, b := range "abaab" {
		before := g.dfa.work
		m.FillMask(mask)
		// One mask stops at most one closure past the bound (a closure visits every NFA
		// state and edge at most once).
		if spent, most := g.dfa.work-before, lim.MaxMaskWork+2*int64(len(g.nfa.states)); spent > most {
			t.Errorf("a mask cost %d units of work, more than MaxMaskWork %d and one closure", spent, lim.MaxMaskWork)
		}
		if m.Err() != nil {
			break
		}
		if err := m.Accept(int(b)); err != nil {
			t.Fatal(err)
		}
	}
	wantLimit(t, "empty-step chains", m.Err(), "MaxMaskWork")
	for _, w := range mask {
		if w != 0 {
			t.Fatal("a matcher that stopped still allows tokens")
		}
	}
	// The same bound leaves ordinary grammars alone.
	g, err = compiler(t, lim).JSONSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	generate(t, g, v, rand.New(rand.NewPCG(1, 1)), 200)
}
