package tokenizer

import (
	"encoding/json"
	"testing"
)

// FuzzPostProcessor reads arbitrary post_processor objects (the pair templates encoder
// models use among them): a processor or an error, never a panic, and a processor joins two
// sequences into ids with one type each, adding the tokens it counts.
func FuzzPostProcessor(f *testing.F) {
	for _, s := range []string{
		`{"type":"BertProcessing","sep":["[SEP]",102],"cls":["[CLS]",101]}`,
		`{"type":"RobertaProcessing","sep":["</s>",2],"cls":["<s>",0]}`,
		`{"type":"Sequence","processors":[{"type":"ByteLevel"},{"type":"TemplateProcessing","single":[{"Sequence":{"id":"A","type_id":0}}],"pair":[{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"x","type_id":1}},{"Sequence":{"id":"B","type_id":1}}],"special_tokens":{"x":{"id":"x","ids":[5],"tokens":["x"]}}}]}`,
		`null`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parsePostProcessor(json.RawMessage(data))
		if err != nil {
			return
		}
		ids, types := p.applyPair([]int{7, 8}, []int{9})
		if len(ids) != len(types) || len(ids) != 3+p.count(true) {
			t.Fatalf("%d ids, %d types for 3 tokens and %d added", len(ids), len(types), p.count(true))
		}
		if one := p.apply([]int{7, 8}); len(one) != 2+p.count(false) {
			t.Fatalf("%d ids for 2 tokens and %d added", len(one), p.count(false))
		}
	})
}
