package grammar

import "context"

// The JSON lexical grammar, byte by byte. Whitespace is at most one space (after ':' and
// ','), numbers have bounded digits, strings use the short escapes only: every document
// this produces is valid JSON and generation always has a way to finish.

// ws is the optional whitespace between JSON tokens.
func ws() *node { return opt(litS(" ")) }

// jsonChar is one character of a JSON string's content: a UTF-8 encoded code point other
// than '"', '\' and the controls, or a short escape.
func jsonChar() *node {
	cont := byteRange(0x80, 0xBF)
	return alt(
		class([2]byte{0x20, 0x21}, [2]byte{0x23, 0x5B}, [2]byte{0x5D, 0x7F}),
		seq(byteRange(0xC2, 0xDF), cont),
		seq(litS("\xE0"), byteRange(0xA0, 0xBF), cont),
		seq(class([2]byte{0xE1, 0xEC}, [2]byte{0xEE, 0xEF}), cont, cont),
		seq(litS("\xED"), byteRange(0x80, 0x9F), cont),
		seq(litS("\xF0"), byteRange(0x90, 0xBF), cont, cont),
		seq(byteRange(0xF1, 0xF3), cont, cont, cont),
		seq(litS("\xF4"), byteRange(0x80, 0x8F), cont, cont),
		seq(litS(`\`), class([2]byte{'"', '"'}, [2]byte{'\\', '\\'}, [2]byte{'/', '/'},
			[2]byte{'b', 'b'}, [2]byte{'f', 'f'}, [2]byte{'n', 'n'}, [2]byte{'r', 'r'}, [2]byte{'t', 't'})),
	)
}

// jsonString is a string of min..max characters (max < 0: unbounded).
func jsonString(min, max int) *node {
	return seq(litS(`"`), rep(jsonChar(), min, max), litS(`"`))
}

func digit() *node   { return byteRange('0', '9') }
func digit19() *node { return byteRange('1', '9') }

// Bounds on number literals, so that a number always ends.
const (
	maxIntDigits  = 15
	maxFracDigits = 15
	maxExpDigits  = 2
)

// jsonInteger is an integer without bounds (up to maxIntDigits digits).
func jsonInteger() *node {
	return seq(opt(litS("-")), alt(litS("0"), seq(digit19(), rep(digit(), 0, maxIntDigits-1))))
}

// jsonNumber is a JSON number.
func jsonNumber() *node {
	return seq(jsonInteger(),
		opt(seq(litS("."), rep(digit(), 1, maxFracDigits))),
		opt(seq(class([2]byte{'e', 'e'}, [2]byte{'E', 'E'}), opt(class([2]byte{'+', '+'}, [2]byte{'-', '-'})), rep(digit(), 1, maxExpDigits))))
}

// anyValueRule is the rule name of an unconstrained JSON value (recursive: objects and
// arrays contain values, unrolled recursionDepth levels deep).
const anyValueRule = "$any"

func anyValueRules(rules map[string]*node) {
	v := ref(anyValueRule)
	member := seq(jsonString(0, -1), litS(":"), ws(), v)
	object := seq(litS("{"), opt(list(member, seq(litS(","), ws()))), litS("}"))
	array := seq(litS("["), opt(list(v, seq(litS(","), ws()))), litS("]"))
	rules[anyValueRule] = alt(object, array, jsonString(0, -1), jsonNumber(), litS("true"), litS("false"), litS("null"))
}

// AnyJSONObject is the language of JSON objects (response_format {"type": "json_object"}).
func AnyJSONObject() *Grammar {
	c, _ := NewCompiler(context.Background(), DefaultLimits)
	anyValueRules(c.rules)
	v := ref(anyValueRule)
	member := seq(jsonString(0, -1), litS(":"), ws(), v)
	root := seq(litS("{"), opt(list(member, seq(litS(","), ws()))), litS("}"))
	g, err := c.Compile(Expr{root, c})
	if err != nil {
		panic("grammar: AnyJSONObject: " + err.Error()) // a fixed grammar: cannot fail
	}
	return g
}
