package tokenizer

import (
	"encoding/json"
	"slices"
)

// postProcessor adds the special tokens of Encode(text, addSpecial=true) and
// joins the two texts of a pair (EncodePair), with their token type ids.
type postProcessor interface {
	apply(ids []int) []int
	// applyPair joins a and b (types: the type id of each output token).
	applyPair(a, b []int) (ids, types []int)
	// count is the number of tokens apply (pair false) or applyPair adds.
	count(pair bool) int
	// firstSpecial is the first token added in front (the BOS), if any.
	firstSpecial() (int, bool)
	// added lists every id the processor may add.
	added() []int
}

type postProcessorJSON struct {
	Type          string         `json:"type"`
	Single        []templateItem `json:"single"`
	Pair          []templateItem `json:"pair"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
	Processors []json.RawMessage `json:"processors"`
	CLS        []json.RawMessage `json:"cls"`
	SEP        []json.RawMessage `json:"sep"`
}

type templateItem struct {
	SpecialToken *struct {
		ID     string `json:"id"`
		TypeID int    `json:"type_id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID     string `json:"id"`
		TypeID int    `json:"type_id"`
	} `json:"Sequence"`
}

func parsePostProcessor(raw json.RawMessage) (postProcessor, error) {
	if isNull(raw) {
		return &templateProcessing{}, nil
	}
	var j postProcessorJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, invalidf("post_processor: %v", err)
	}
	switch j.Type {
	case "ByteLevel":
		return &templateProcessing{}, nil // only trims offsets, which Encode does not return
	case "TemplateProcessing":
		return parseTemplate(j)
	case "RobertaProcessing", "BertProcessing":
		cls, err := processorToken(j.CLS, "cls")
		if err != nil {
			return nil, err
		}
		sep, err := processorToken(j.SEP, "sep")
		if err != nil {
			return nil, err
		}
		tp := &templateProcessing{single: []templatePart{{ids: []int{cls}}, {seq: 'A'}, {ids: []int{sep}}}}
		if j.Type == "BertProcessing" { // [CLS] A [SEP] B [SEP], B and its [SEP] of type 1
			tp.pair = append(slices.Clone(tp.single), templatePart{seq: 'B', typeID: 1}, templatePart{ids: []int{sep}, typeID: 1})
		} else { // <s> A </s> </s> B </s>, every type 0
			tp.pair = append(slices.Clone(tp.single), templatePart{ids: []int{sep}}, templatePart{seq: 'B'}, templatePart{ids: []int{sep}})
		}
		return tp, nil
	case "Sequence":
		var seq sequenceProcessor
		for _, r := range j.Processors {
			p, err := parsePostProcessor(r)
			if err != nil {
				return nil, err
			}
			seq = append(seq, p)
		}
		return seq, nil
	}
	return nil, &UnsupportedError{Component: "post_processor", Type: j.Type}
}

// processorToken reads a ["<s>", 0] pair of Roberta/BertProcessing.
func processorToken(pair []json.RawMessage, name string) (int, error) {
	var id int
	if len(pair) != 2 || json.Unmarshal(pair[1], &id) != nil {
		return 0, invalidf("post_processor %s must be [token, id]", name)
	}
	return id, nil
}

func parseTemplate(j postProcessorJSON) (postProcessor, error) {
	single, err := templateParts(j, j.Single, "single", "A")
	if err != nil {
		return nil, err
	}
	tp := &templateProcessing{single: single}
	if j.Pair != nil {
		if tp.pair, err = templateParts(j, j.Pair, "pair", "AB"); err != nil {
			return nil, err
		}
	}
	return tp, nil
}

// templateParts reads one template, which must hold each sequence of seqs
// once, in that order.
func templateParts(j postProcessorJSON, items []templateItem, name, seqs string) ([]templatePart, error) {
	var parts []templatePart
	seen := ""
	for _, it := range items {
		switch {
		case it.Sequence != nil:
			id := it.Sequence.ID
			if len(id) != 1 || len(seen) >= len(seqs) || id[0] != seqs[len(seen)] {
				return nil, invalidf("post_processor %s template must contain the sequences %s once each in order, found %q", name, seqs, id)
			}
			seen += id
			parts = append(parts, templatePart{seq: id[0], typeID: it.Sequence.TypeID})
		case it.SpecialToken != nil:
			st, ok := j.SpecialTokens[it.SpecialToken.ID]
			if !ok {
				return nil, invalidf("post_processor template uses special token %q that special_tokens does not define", it.SpecialToken.ID)
			}
			parts = append(parts, templatePart{ids: st.IDs, typeID: it.SpecialToken.TypeID})
		default:
			return nil, invalidf("post_processor template item is neither SpecialToken nor Sequence")
		}
	}
	if seen != seqs {
		return nil, invalidf("post_processor %s template must contain the sequences %s, found %q", name, seqs, seen)
	}
	return parts, nil
}

// templatePart is a run of special tokens (ids) or one of the sequences (seq
// 'A' or 'B'), with the token type id its tokens get.
type templatePart struct {
	ids    []int
	seq    byte
	typeID int
}

// templateProcessing lays out a sequence, or a pair, by a template. The zero
// value adds nothing and joins a pair end to end.
type templateProcessing struct {
	single, pair []templatePart
}

func (tp *templateProcessing) apply(ids []int) []int {
	if len(tp.single) == 0 {
		return ids
	}
	out, _ := tp.lay(tp.single, ids, nil)
	return out
}

func (tp *templateProcessing) applyPair(a, b []int) ([]int, []int) {
	if len(tp.pair) == 0 { // no pair template: A then B, B of type 1, as Hugging Face defaults
		ids, types := tp.lay(tp.single, a, nil)
		ids = append(ids, b...)
		for range b {
			types = append(types, 1)
		}
		return ids, types
	}
	return tp.lay(tp.pair, a, b)
}

func (tp *templateProcessing) lay(parts []templatePart, a, b []int) (ids, types []int) {
	if len(parts) == 0 {
		parts = []templatePart{{seq: 'A'}}
	}
	for _, p := range parts {
		run := p.ids
		switch p.seq {
		case 'A':
			run = a
		case 'B':
			run = b
		}
		ids = append(ids, run...)
		for range run {
			types = append(types, p.typeID)
		}
	}
	return ids, types
}

func (tp *templateProcessing) count(pair bool) int {
	parts := tp.single
	if pair && tp.pair != nil {
		parts = tp.pair
	}
	n := 0
	for _, p := range parts {
		n += len(p.ids)
	}
	return n
}

func (tp *templateProcessing) firstSpecial() (int, bool) {
	if len(tp.single) == 0 || tp.single[0].seq != 0 || len(tp.single[0].ids) == 0 {
		return 0, false
	}
	return tp.single[0].ids[0], true
}

func (tp *templateProcessing) added() []int {
	var ids []int
	for _, p := range append(slices.Clone(tp.single), tp.pair...) {
		ids = append(ids, p.ids...)
	}
	return ids
}

// prefixSuffix is the template of a config that asks for BOS and/or EOS
// (tokenizer_config.json's add_bos_token, add_eos_token).
func prefixSuffix(before, after []int) *templateProcessing {
	return &templateProcessing{single: []templatePart{{ids: before}, {seq: 'A'}, {ids: after}}}
}

type sequenceProcessor []postProcessor

func (seq sequenceProcessor) added() []int {
	var ids []int
	for _, p := range seq {
		ids = append(ids, p.added()...)
	}
	return ids
}

func (seq sequenceProcessor) apply(ids []int) []int {
	for _, p := range seq {
		ids = p.apply(ids)
	}
	return ids
}

// applyPair joins the pair with the first processor that lays out pairs
// (adds tokens); the others only touch offsets.
func (seq sequenceProcessor) applyPair(a, b []int) ([]int, []int) {
	for _, p := range seq {
		if p.count(true) > 0 {
			return p.applyPair(a, b)
		}
	}
	return (&templateProcessing{}).applyPair(a, b)
}

func (seq sequenceProcessor) count(pair bool) int {
	n := 0
	for _, p := range seq {
		n += p.count(pair)
	}
	return n
}

func (seq sequenceProcessor) firstSpecial() (int, bool) {
	for _, p := range seq {
		if id, ok := p.firstSpecial(); ok {
			return id, true
		}
	}
	return 0, false
}
