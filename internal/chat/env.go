package chat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// addEnvironment adds the globals Hugging Face's template environment
// provides beyond the Jinja built-ins.
func addEnvironment(data map[string]jinja.Value, now time.Time, m *meter) {
	depth := 0
	data["__hf_enter_macro"] = jinja.NewCallable("macro", func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
		if err := m.step(); err != nil {
			return jinja.Undefined(), err
		}
		depth++
		if depth > maxMacroDepth {
			return jinja.Undefined(), &BudgetError{Limit: "depth", Detail: fmt.Sprintf("macros nested deeper than %d", maxMacroDepth)}
		}
		return jinja.NewString(""), nil
	})
	data["__hf_leave_macro"] = jinja.NewCallable("endmacro", func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
		depth--
		return jinja.NewString(""), nil
	})
	data["range"] = m.guard("range", rangeFunc)
	data["raise_exception"] = jinja.NewCallable("raise_exception", raiseException)
	data["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), fmt.Errorf("strftime_now: want one format string, got %d arguments", len(args))
		}
		return jinja.NewString(strftime(now, args[0].AsString())), nil
	})
}

// Limits that keep a hostile or broken template from exhausting the
// process; real chat templates stay far below them.
const (
	maxMacroDepth = 200
	maxSequence   = 1 << 20 // items of a range, bytes or items of a repetition
)

// ErrLimit is returned when a template exceeds a resource limit.
var ErrLimit = errors.New("chat: template exceeds a resource limit")

// rangeFunc is Python's range(stop) / range(start, stop[, step]), capped.
func rangeFunc(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var r [3]int64
	r[2] = 1
	for i, a := range args {
		if !a.IsInt() {
			return jinja.Undefined(), fmt.Errorf("range: argument %d is a %s, want an integer", i+1, kindName(a))
		}
	}
	switch len(args) {
	case 1:
		r[1] = args[0].AsInt()
	case 2, 3:
		for i, a := range args {
			r[i] = a.AsInt()
		}
	default:
		return jinja.Undefined(), fmt.Errorf("range: want 1 to 3 arguments, got %d", len(args))
	}
	start, stop, step := r[0], r[1], r[2]
	if step == 0 {
		return jinja.Undefined(), errors.New("range: step must not be zero")
	}
	var n int64
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		n = (start - stop - step - 1) / -step
	}
	if n > maxSequence {
		return jinja.Undefined(), fmt.Errorf("%w: range of %d items", ErrLimit, n)
	}
	items := make([]jinja.Value, n)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}

func raiseException(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	msg := ""
	if len(args) > 0 {
		if args[0].IsString() {
			msg = args[0].AsString()
		} else {
			msg = args[0].String()
		}
	}
	return jinja.Undefined(), &RaiseError{Msg: msg}
}

// strftime formats t like C's strftime for the directives chat templates
// use (%d %b %Y and friends, plus glibc's %-d style no-padding flag).
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 >= len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		pad := true
		if format[i] == '-' && i+1 < len(format) {
			pad = false
			i++
		}
		num := func(v, width int) {
			s := strconv.Itoa(v)
			if pad {
				for len(s) < width {
					s = "0" + s
				}
			}
			b.WriteString(s)
		}
		switch format[i] {
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'y':
			num(t.Year()%100, 2)
		case 'm':
			num(int(t.Month()), 2)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			s := strconv.Itoa(t.Day())
			if pad && len(s) < 2 {
				s = " " + s
			}
			b.WriteString(s)
		case 'j':
			num(t.YearDay(), 3)
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'B':
			b.WriteString(t.Month().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday())))
		case 'Z':
			name, _ := t.Zone()
			b.WriteString(name)
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			if !pad {
				b.WriteByte('-')
			}
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
