package chat

import (
	"context"
	"errors"
	"runtime"
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
