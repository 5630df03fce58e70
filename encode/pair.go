package encode

import (
	"encoding/json"
	"fmt"
)

// pairTemplate is how a cross-encoder's tokenizer joins two sequences A and B, with each
// part's token type: tokenizer.json's post_processor for pairs (BertProcessing:
// [CLS] A [SEP] B [SEP], types 0 then 1; RobertaProcessing: <s> A </s></s> B </s>, types 0;
// TemplateProcessing's "pair" template). Package tokenizer encodes single texts; this
// reads the pair part of the same post_processor.
type pairTemplate struct {
	items []pairItem
}

// pairItem is a run of special ids (seq 0) or the sequence A (1) or B (2), with a type.
type pairItem struct {
	seq int
	ids []int
	typ int
}

// specials counts the special ids the template adds.
func (p *pairTemplate) specials() int {
	n := 0
	for _, it := range p.items {
		n += len(it.ids)
	}
	return n
}

// apply joins a and b (ids without special tokens).
func (p *pairTemplate) apply(a, b []int) (ids, types []int) {
	for _, it := range p.items {
		part := it.ids
		switch it.seq {
		case 1:
			part = a
		case 2:
			part = b
		}
		ids = append(ids, part...)
		for range part {
			types = append(types, it.typ)
		}
	}
	return ids, types
}

// parsePairTemplate reads the pair template of a tokenizer.json's post_processor (none:
// A then B, types 0 and 1, as the tokenizers library joins them).
func parsePairTemplate(tokenizerJSON []byte) (*pairTemplate, error) {
	var file struct {
		PostProcessor json.RawMessage `json:"post_processor"`
	}
	if err := json.Unmarshal(tokenizerJSON, &file); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	p, err := pairOf(file.PostProcessor)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json post_processor: %w", err)
	}
	if p == nil {
		p = &pairTemplate{items: []pairItem{{seq: 1}, {seq: 2, typ: 1}}}
	}
	return p, nil
}

type processorJSON struct {
	Type          string            `json:"type"`
	CLS           []json.RawMessage `json:"cls"`
	SEP           []json.RawMessage `json:"sep"`
	Processors    []json.RawMessage `json:"processors"`
	Pair          []templateItem    `json:"pair"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
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

// pairOf returns the pair template of a post_processor, nil if it adds nothing to pairs.
func pairOf(raw json.RawMessage) (*pairTemplate, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var j processorJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, err
	}
	token := func(pair []json.RawMessage, name string) (int, error) {
		var id int
		if len(pair) != 2 || json.Unmarshal(pair[1], &id) != nil {
			return 0, fmt.Errorf("%s %s must be [token, id]", j.Type, name)
		}
		return id, nil
	}
	switch j.Type {
	case "ByteLevel":
		return nil, nil
	case "BertProcessing", "RobertaProcessing":
		cls, err := token(j.CLS, "cls")
		if err != nil {
			return nil, err
		}
		sep, err := token(j.SEP, "sep")
		if err != nil {
			return nil, err
		}
		if j.Type == "BertProcessing" {
			return &pairTemplate{items: []pairItem{{ids: []int{cls}}, {seq: 1}, {ids: []int{sep}}, {seq: 2, typ: 1}, {ids: []int{sep}, typ: 1}}}, nil
		}
		return &pairTemplate{items: []pairItem{{ids: []int{cls}}, {seq: 1}, {ids: []int{sep, sep}}, {seq: 2}, {ids: []int{sep}}}}, nil
	case "TemplateProcessing":
		p := &pairTemplate{}
		seen := map[string]bool{}
		for _, it := range j.Pair {
			switch {
			case it.Sequence != nil:
				seq := map[string]int{"A": 1, "B": 2}[it.Sequence.ID]
				if seq == 0 || seen[it.Sequence.ID] {
					return nil, fmt.Errorf("pair template names sequence %q (want A and B once each)", it.Sequence.ID)
				}
				seen[it.Sequence.ID] = true
				p.items = append(p.items, pairItem{seq: seq, typ: it.Sequence.TypeID})
			case it.SpecialToken != nil:
				st, ok := j.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("pair template uses special token %q that special_tokens does not define", it.SpecialToken.ID)
				}
				p.items = append(p.items, pairItem{ids: st.IDs, typ: it.SpecialToken.TypeID})
			default:
				return nil, fmt.Errorf("pair template item is neither SpecialToken nor Sequence")
			}
		}
		if !seen["A"] || !seen["B"] {
			return nil, fmt.Errorf("pair template lacks sequence A or B")
		}
		return p, nil
	case "Sequence":
		var found *pairTemplate
		for _, r := range j.Processors {
			p, err := pairOf(r)
			if err != nil {
				return nil, err
			}
			if p != nil {
				found = p
			}
		}
		return found, nil
	}
	return nil, fmt.Errorf("post_processor %q is not supported for pairs", j.Type)
}
