package chat

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// A chat template is a program from a stranger: one rendering is given a
// Budget, and a template that exceeds it fails with a *BudgetError naming
// the limit it hit. Real chat templates use a tiny fraction of the default.
type Budget struct {
	// MaxOutput bounds the rendered text, in bytes (text captured by set
	// blocks and filter blocks counts as it is produced).
	MaxOutput int
	// MaxSteps bounds the work: loop iterations, macro calls and every
	// checked operation (printing, arithmetic, filters of this package).
	MaxSteps int
	// Timeout bounds the wall time of one rendering.
	Timeout time.Duration
}

// DefaultBudget is the budget of Render and of RenderContext when
// Input.Budget is zero: 4 MiB of text, 1,000,000 steps, 2 seconds.
var DefaultBudget = Budget{MaxOutput: 4 << 20, MaxSteps: 1_000_000, Timeout: 2 * time.Second}

// Bounds on a template's source, checked by Parse before anything is
// compiled. Compiling costs more than linear time in them: the engine
// rescans the earlier tags for every statement tag (the rewritten program
// has no raw text to stop its scan), and a nested expression is re-emitted
// level by level. Real chat templates stay far below: the 37 of the test
// fixtures are at most 25 KB, with 771 tags and expressions nested a few
// levels. Past them, 10,000 nested or chained expressions took 1-7 s to
// compile and 100,000 took minutes.
const (
	maxSourceBytes = 1 << 20 // bytes of template source
	maxTags        = 1 << 13 // {{ }}, {% %} and {# #} tags
	maxExprDepth   = 256     // brackets, operators, filters and attribute steps nested in one expression
)

// nestingError is the "nesting" limit of Parse.
func nestingError() error {
	return &BudgetError{Limit: "nesting", Detail: fmt.Sprintf("an expression nested deeper than %d (brackets, operators, filters, attributes)", maxExprDepth)}
}

// maxValue bounds any one string a template builds (by +, ~, join,
// replace, indent, tojson, printing); a template doubling a string fails
// here long before memory runs out.
const maxValue = 16 << 20

// BudgetError reports the limit a rendering hit: "output", "steps",
// "time", "value" (one string or list too large), "depth" (macros nested
// deeper than 200) or "canceled" (the
// context ended: the client left or the server is stopping); or, from
// Parse, the limit a template's source went past: "source" (more than
// maxSourceBytes), "tags" (more than maxTags) or "nesting" (an expression
// nested deeper than maxExprDepth). It matches ErrLimit, and for
// "canceled" also the context's error.
type BudgetError struct {
	Limit  string
	Detail string
	cause  error
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("chat template exceeds its %s budget: %s", e.Limit, e.Detail)
}

// Is makes a BudgetError match ErrLimit.
func (e *BudgetError) Is(target error) bool { return target == ErrLimit }

// Unwrap returns the context's error for "canceled".
func (e *BudgetError) Unwrap() error { return e.cause }

// meter counts one rendering's use of its budget.
type meter struct {
	ctx      context.Context
	budget   Budget
	deadline time.Time
	steps    int
	output   int
}

func newMeter(ctx context.Context, b Budget) *meter {
	if b.MaxOutput <= 0 {
		b.MaxOutput = DefaultBudget.MaxOutput
	}
	if b.MaxSteps <= 0 {
		b.MaxSteps = DefaultBudget.MaxSteps
	}
	if b.Timeout <= 0 {
		b.Timeout = DefaultBudget.Timeout
	}
	return &meter{ctx: ctx, budget: b, deadline: time.Now().Add(b.Timeout)}
}

// step counts one unit of work; every 256 steps it looks at the clock and
// the context.
func (m *meter) step() error {
	m.steps++
	if m.steps > m.budget.MaxSteps {
		return &BudgetError{Limit: "steps", Detail: fmt.Sprintf("more than %d steps (loop iterations, calls)", m.budget.MaxSteps)}
	}
	if m.steps%256 == 0 {
		return m.check()
	}
	return nil
}

// check looks at the clock and the context.
func (m *meter) check() error {
	if err := m.ctx.Err(); err != nil {
		return &BudgetError{Limit: "canceled", Detail: err.Error(), cause: err}
	}
	if time.Now().After(m.deadline) {
		return &BudgetError{Limit: "time", Detail: fmt.Sprintf("still rendering after %v", m.budget.Timeout)}
	}
	return nil
}

// emit counts n bytes of output.
func (m *meter) emit(n int) error {
	m.output += n
	if m.output > m.budget.MaxOutput {
		return &BudgetError{Limit: "output", Detail: fmt.Sprintf("more than %d bytes of text", m.budget.MaxOutput)}
	}
	return nil
}

// checkValue refuses a string longer than maxValue or a list longer than
// maxSequence.
func checkValue(v jinja.Value) error {
	switch {
	case v.IsString() && len(v.AsString()) > maxValue:
		return &BudgetError{Limit: "value", Detail: fmt.Sprintf("a string of %d bytes (the bound is %d)", len(v.AsString()), maxValue)}
	case v.IsList() && v.AsList().Len() > maxSequence:
		return &BudgetError{Limit: "value", Detail: fmt.Sprintf("a list of %d items (the bound is %d)", v.AsList().Len(), maxSequence)}
	}
	return nil
}

// guard wraps a function of the environment: each call is a step, and its
// result is checked by checkValue.
func (m *meter) guard(name string, fn filterFunc) jinja.Value {
	return jinja.NewCallable(name, func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
		if err := m.step(); err != nil {
			return jinja.Undefined(), err
		}
		for _, a := range args {
			if err := checkValue(a); err != nil {
				return jinja.Undefined(), err
			}
		}
		v, err := fn(args, kw)
		if err != nil {
			return v, err
		}
		if err := checkValue(v); err != nil {
			return jinja.Undefined(), err
		}
		return v, nil
	})
}

// addBudget adds the metered hooks rewriteSource emits: __hf_step at the
// top of every loop body and __hf_print around everything printed.
func addBudget(data map[string]jinja.Value, m *meter) {
	data["__hf_step"] = jinja.NewCallable("step", func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
		if err := m.step(); err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewString(""), nil
	})
	data["__hf_print"] = m.guard("print", func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
		v, err := pyStr(args, kw)
		if err != nil {
			return v, err
		}
		return v, m.emit(len(printText(v)))
	})
}

// printText is the text the engine prints for a value pyStr returned.
func printText(v jinja.Value) string {
	switch {
	case v.IsString():
		return v.AsString()
	case v.IsUndefined(), v.IsNone():
		return ""
	}
	return v.String()
}

// joinFilter is Jinja2's join with the size of the result bounded.
func joinFilter(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewString(""), nil
	}
	sep := ""
	if s, ok := argument(args, kw, 0, "d"); ok {
		sep = printText(s)
	}
	attr := ""
	if a, ok := kw["attribute"]; ok {
		attr = printText(a)
	}
	var items []jinja.Value
	switch v := args[0]; {
	case v.IsList():
		items = v.AsList().Items
	case v.IsString():
		for _, r := range v.AsString() {
			items = append(items, jinja.NewString(string(r)))
		}
	case v.IsDict():
		for _, k := range v.AsDict().OrderedKeys() {
			items = append(items, jinja.NewString(k))
		}
	default:
		return jinja.NewString(printText(v)), nil
	}
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteString(sep)
		}
		if attr != "" && it.IsDict() {
			if x, ok := it.AsDict().Get(attr); ok {
				it = x
			}
		}
		s, err := pyStr([]jinja.Value{it}, nil)
		if err != nil {
			return jinja.Undefined(), err
		}
		b.WriteString(printText(s))
		if b.Len() > maxValue {
			return jinja.Undefined(), &BudgetError{Limit: "value", Detail: fmt.Sprintf("join builds more than %d bytes", maxValue)}
		}
	}
	return jinja.NewString(b.String()), nil
}

// replaceFilter is s|replace(old, new[, count]) and s.replace(old, new[,
// count]) with the size of the result computed before it is built.
func replaceFilter(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 3 {
		return jinja.Undefined(), fmt.Errorf("replace: want a string, old and new, got %d arguments", len(args))
	}
	s, old, repl := printText(args[0]), printText(args[1]), printText(args[2])
	count := -1
	if c, ok := argument(args, kw, 2, "count"); ok && c.IsInt() {
		count = int(c.AsInt())
	}
	n := strings.Count(s, old)
	if count >= 0 && count < n {
		n = count
	}
	if size := int64(len(s)) + int64(n)*(int64(len(repl))-int64(len(old))); size > maxValue {
		return jinja.Undefined(), &BudgetError{Limit: "value", Detail: fmt.Sprintf("replace would build %d bytes (the bound is %d)", size, maxValue)}
	}
	return jinja.NewString(strings.Replace(s, old, repl, count)), nil
}

// indentFilter is Jinja2's indent(width=4, first=False) with the size of
// the result computed before it is built.
func indentFilter(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewString(""), nil
	}
	s := printText(args[0])
	pad := "    "
	if w, ok := argument(args, kw, 0, "width"); ok {
		switch {
		case w.IsInt():
			if w.AsInt() < 0 || w.AsInt() > maxValue {
				return jinja.Undefined(), &BudgetError{Limit: "value", Detail: fmt.Sprintf("indent width %d", w.AsInt())}
			}
			pad = strings.Repeat(" ", int(w.AsInt()))
		case w.IsString():
			pad = w.AsString()
		}
	}
	first := boolArg(args, kw, 1, "first", false)
	lines := strings.Split(s, "\n")
	if size := int64(len(s)) + int64(len(lines))*int64(len(pad)); size > maxValue {
		return jinja.Undefined(), &BudgetError{Limit: "value", Detail: fmt.Sprintf("indent would build %d bytes (the bound is %d)", size, maxValue)}
	}
	for i, line := range lines {
		if (i > 0 || first) && line != "" {
			lines[i] = pad + line
		}
	}
	return jinja.NewString(strings.Join(lines, "\n")), nil
}
