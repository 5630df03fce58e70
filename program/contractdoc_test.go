package program

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// docs/contract.md must stay complete by itself: another runner is written from it, and the
// file reader rejects unknown fields, so every manifest field and every op kind a program
// may hold is named there (in backticks).
func TestContractDocNamesEveryManifestFieldAndOp(t *testing.T) {
	doc, err := os.ReadFile("../docs/contract.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	named := func(what, label string) {
		t.Helper()
		name := label[strings.LastIndex(label, ".")+1:] // a field is named by its own JSON name
		if !strings.Contains(text, "`"+name+"`") && !strings.Contains(text, "`"+name+"[") &&
			!strings.Contains(text, `"`+name+`"`) {
			t.Errorf("docs/contract.md does not name %s %q", what, label)
		}
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			named("manifest field", path+tag)
			walk(f.Type, path+tag+".")
		}
	}
	walk(reflect.TypeFor[Manifest](), "")
	for kind := range arity {
		named("op kind", string(kind))
	}
	for _, act := range []string{ActSiLU, ActGELUTanh} {
		named("activation", act)
	}
	for _, d := range []DType{F32, F16, BF16, Q8, Q4, I64, Bool} {
		named("dtype", string(d))
	}
}
