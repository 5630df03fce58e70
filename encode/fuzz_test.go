package encode

import "testing"

// FuzzPairTemplate reads arbitrary tokenizer.json post-processors: a template or an error,
// never a panic, and a template joins two sequences into ids with one type each.
func FuzzPairTemplate(f *testing.F) {
	for _, s := range []string{
		`{"post_processor":{"type":"BertProcessing","sep":["[SEP]",102],"cls":["[CLS]",101]}}`,
		`{"post_processor":{"type":"RobertaProcessing","sep":["</s>",2],"cls":["<s>",0]}}`,
		`{"post_processor":{"type":"Sequence","processors":[{"type":"ByteLevel"},{"type":"TemplateProcessing","pair":[{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"x","type_id":1}},{"Sequence":{"id":"B","type_id":1}}],"special_tokens":{"x":{"ids":[5]}}}]}}`,
		`{"post_processor":null}`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parsePairTemplate(data)
		if err != nil {
			return
		}
		ids, types := p.apply([]int{7, 8}, []int{9})
		if len(ids) != len(types) || len(ids) != 3+p.specials() {
			t.Fatalf("%d ids, %d types for 3 tokens and %d specials", len(ids), len(types), p.specials())
		}
	})
}
