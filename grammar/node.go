package grammar

// node is a byte-level grammar expression. Trees may share subtrees (a DAG); the automaton
// builder expands them.
type node struct {
	kind     nodeKind
	counted  bool      // charged to a budget already
	lit      []byte    // kLit
	ranges   [][2]byte // kClass: inclusive byte ranges
	kids     []*node   // kSeq, kAlt, kRep (one kid), kList (item, separator), kMembers (members, separator)
	required []bool    // kMembers: whether member i must be present
	min, max int       // kRep: bounds; max < 0 is unbounded
	ref      string    // kRef: a rule name
}

type nodeKind uint8

const (
	kEmpty nodeKind = iota // the empty string
	kFail                  // no string at all
	kLit
	kClass
	kSeq
	kAlt
	kRep
	kRef
	kList    // kids[0] (kids[1] kids[0])*, with one copy of each
	kMembers // the members of a JSON object, in order, each optional unless required
)

func lit(b []byte) *node       { return &node{kind: kLit, lit: b} }
func litS(s string) *node      { return lit([]byte(s)) }
func empty() *node             { return &node{kind: kEmpty} }
func fail() *node              { return &node{kind: kFail} }
func ref(name string) *node    { return &node{kind: kRef, ref: name} }
func class(r ...[2]byte) *node { return &node{kind: kClass, ranges: r} }
func byteRange(lo, hi byte) *node {
	return class([2]byte{lo, hi})
}

func seq(kids ...*node) *node {
	switch len(kids) {
	case 0:
		return empty()
	case 1:
		return kids[0]
	}
	return &node{kind: kSeq, kids: kids}
}

func alt(kids ...*node) *node {
	switch len(kids) {
	case 0:
		return fail()
	case 1:
		return kids[0]
	}
	return &node{kind: kAlt, kids: kids}
}

func rep(n *node, min, max int) *node { return &node{kind: kRep, kids: []*node{n}, min: min, max: max} }
func opt(n *node) *node               { return rep(n, 0, 1) }
func star(n *node) *node              { return rep(n, 0, -1) }

// list is item (sep item)*: one or more items separated by sep, built with a single copy
// of item (a recursive item stays linear in size).
func list(item, sep *node) *node { return &node{kind: kList, kids: []*node{item, sep}} }

// members is the inside of a JSON object whose members come in this order, separated by
// sep, each one optional unless required. The automaton shares the tails after each
// member, so that it grows linearly with the members: spelling out "the first present
// member takes no comma" as alternatives needs a copy of every later member per optional
// one, N² in all.
func members(kvs []*node, required []bool, sep *node) *node {
	return &node{kind: kMembers, kids: append(kvs[:len(kvs):len(kvs)], sep), required: required}
}
