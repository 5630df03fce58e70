package chat

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHostileTemplatesHitTheirBudget: each template would take gigabytes or
// minutes; each ends within its budget with a *BudgetError naming the limit,
// having allocated a bounded amount.
func TestHostileTemplatesHitTheirBudget(t *testing.T) {
	cases := []struct {
		name, src string
		limit     string
	}{
		{"string doubled 60 times", "{% set s = namespace(v='ab') %}{% for i in range(60) %}{% set s.v = s.v + s.v %}{% endfor %}{{ s.v|length }}", "value"},
		{"string doubled by ~", "{% set s = namespace(v='ab') %}{% for i in range(60) %}{% set s.v = s.v ~ s.v %}{% endfor %}{{ s.v|length }}", "value"},
		{"nested range(100000) loops", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "steps"},
		{"text in a long loop", "{% for i in range(1000000) %}" + strings.Repeat("x", 1000) + "{% endfor %}", "output"},
		{"replace bomb", "{% set s = 'a' * 1000000 %}{{ s|replace('a', s) }}", "value"},
		{"replace method bomb", "{% set s = 'a' * 1000000 %}{{ s.replace('a', s) }}", "value"},
		{"join of a repeated big string", "{% set s = 'a' * 1000000 %}{{ ([s] * 1000)|join }}", "value"},
		{"repr of a repeated big string", "{% set s = 'a' * 1000000 %}{{ [s] * 1000 }}", "output"},
		{"tojson of a repeated big string", "{% set s = 'a' * 1000000 %}{{ ([s] * 1000)|tojson }}", "value"},
		{"indent bomb", "{% set s = '\\n' * 1000000 %}{{ ('x' ~ s)|indent(100000) }}", "value"},
		{"deep recursion", "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "depth"},
		{"wide recursion", "{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(40) }}", "steps"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := Parse(c.src)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err = tmpl.Render(Input{Messages: []Message{{Role: "user", Content: "hi"}}})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			var be *BudgetError
			if !errors.As(err, &be) || !errors.Is(err, ErrLimit) {
				t.Fatalf("Render = %v, want a *BudgetError", err)
			}
			if be.Limit != c.limit && !(c.limit == "steps" && be.Limit == "time") {
				t.Errorf("hit the %q limit (%v), want %q", be.Limit, err, c.limit)
			}
			if took > 5*time.Second {
				t.Errorf("took %v", took)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 512<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
		})
	}
}

// TestRenderStopsWhenTheContextEnds: a spinning template ends promptly
// when its request's context is cancelled, with an error matching it.
func TestRenderStopsWhenTheContextEnds(t *testing.T) {
	tmpl, err := Parse("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = tmpl.RenderContext(ctx, Input{Budget: Budget{MaxSteps: 1 << 40, Timeout: time.Hour}})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrLimit) {
		t.Fatalf("RenderContext = %v, want the context's error", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %v after a 50 ms deadline", took)
	}
}

// TestBudgetIsConfigurable: a budget's limits apply as given.
func TestBudgetIsConfigurable(t *testing.T) {
	tmpl, err := Parse("{% for m in messages %}{{ m.content }}{% endfor %}")
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Messages: []Message{{Role: "user", Content: strings.Repeat("y", 100)}}}
	if _, err := tmpl.Render(in); err != nil {
		t.Fatalf("default budget: %v", err)
	}
	in.Budget = Budget{MaxOutput: 50}
	var be *BudgetError
	if _, err := tmpl.Render(in); !errors.As(err, &be) || be.Limit != "output" {
		t.Fatalf("MaxOutput 50: %v, want the output limit", err)
	}
	in.Budget = Budget{MaxSteps: 1}
	if _, err := tmpl.Render(in); !errors.As(err, &be) || be.Limit != "steps" {
		t.Fatalf("MaxSteps 1: %v, want the steps limit", err)
	}
}

// TestHostileSourcesAreBounded is the regression test for template sources whose
// compiling is superlinear: 10,000 nested or chained expressions ((((…)))), not not …,
// - - …, a + a + …, x|f|f…, x.a.a…) took 1-7 s to compile and 100,000 took minutes, and
// the engine rescans every earlier tag for each statement (10,000 {% set %} tags: 0.2 s,
// 100,000: 20 s). Parse now refuses a source past the bounds of a real template with a
// *BudgetError naming the bound, and accepts one at them.
func TestHostileSourcesAreBounded(t *testing.T) {
	rep := strings.Repeat
	const n = maxExprDepth + 1
	for _, c := range []struct {
		name, src, limit string
	}{
		{"parentheses", "{{ " + rep("(", n) + "1" + rep(")", n) + " }}", "nesting"},
		{"lists", "{{ " + rep("[", n) + rep("]", n) + " }}", "nesting"},
		{"brackets the translator leaves as written", "{{ *x " + rep("(", n) + rep(")", n) + " }}", "nesting"},
		{"brackets in a statement", "{% set x = " + rep("[", n) + rep("]", n) + " %}", "nesting"},
		{"not", "{{ " + rep("not ", n) + "1 }}", "nesting"},
		{"unary minus", "{{ " + rep("-", n) + "1 }}", "nesting"},
		{"a chain of +", "{{ 1" + rep(" + 1", n) + " }}", "nesting"},
		{"a chain of ~", "{{ 'a'" + rep(" ~ 'a'", n) + " }}", "nesting"},
		{"a chain of filters", "{{ x" + rep("|string", n) + " }}", "nesting"},
		{"a chain of attributes", "{{ x" + rep(".a", n) + " }}", "nesting"},
		{"a chain of subscripts", "{{ x" + rep("[0]", n) + " }}", "nesting"},
		{"a chain of conditionals", "{{ 1" + rep(" if true else 1", n) + " }}", "nesting"},
		{"100,000 nested parentheses", "{{ " + rep("(", 100000) + "1" + rep(")", 100000) + " }}", "nesting"},
		{"100,000 chained +", "{{ 1" + rep(" + 1", 100000) + " }}", "nesting"},
		{"too many tags", rep("{% set x = 1 %}", maxTags+1), "tags"},
		{"too many comments", rep("{# c #}", maxTags+1), "tags"},
		{"too long", rep("a", maxSourceBytes+1), "source"},
	} {
		start := time.Now()
		_, err := Parse(c.src)
		var be *BudgetError
		if !errors.As(err, &be) || be.Limit != c.limit || !errors.Is(err, ErrLimit) {
			t.Errorf("%s (%d bytes): %v; want a *BudgetError of %q", c.name, len(c.src), err, c.limit)
		}
		t.Logf("%s: %v", c.name, time.Since(start))
	}
	// At the bounds: parsed, and rendered as Jinja2 would.
	for _, c := range []struct{ name, src, want string }{
		{"nested parentheses", "{{ " + rep("(", maxExprDepth-1) + "1" + rep(")", maxExprDepth-1) + " }}", "1"},
		{"a chain of +", "{{ 1" + rep(" + 1", maxExprDepth-2) + " }}", strconv.Itoa(maxExprDepth - 1)},
		{"tags", rep("{% set x = 1 %}", maxTags-1) + "{{ x }}", "1"},
	} {
		start := time.Now()
		tmpl, err := Parse(c.src)
		if err != nil {
			t.Errorf("%s at the bound: %v", c.name, err)
			continue
		}
		t.Logf("%s at the bound: parsed in %v", c.name, time.Since(start))
		if got := mustRenderTemplate(t, tmpl); got != c.want {
			t.Errorf("%s at the bound: rendered %q, want %q", c.name, got, c.want)
		}
	}
}
