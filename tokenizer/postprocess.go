package tokenizer

import (
	"encoding/json"
)

// postProcessor adds the special tokens of Encode(text, addSpecial=true).
type postProcessor interface {
	apply(ids []int) []int
	// firstSpecial is the first token added in front (the BOS), if any.
	firstSpecial() (int, bool)
	// added lists every id the processor may add.
	added() []int
}

type postProcessorJSON struct {
	Type          string         `json:"type"`
	Single        []templateItem `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
	Processors []json.RawMessage `json:"processors"`
	CLS        []json.RawMessage `json:"cls"`
	SEP        []json.RawMessage `json:"sep"`
}

type templateItem struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
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
		return &templateProcessing{before: []int{cls}, after: []int{sep}}, nil
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
	tp := &templateProcessing{}
	seenA := false
	for _, it := range j.Single {
		switch {
		case it.Sequence != nil:
			if it.Sequence.ID != "A" || seenA {
				return nil, invalidf("post_processor single template must contain sequence A once, found %q", it.Sequence.ID)
			}
			seenA = true
		case it.SpecialToken != nil:
			st, ok := j.SpecialTokens[it.SpecialToken.ID]
			if !ok {
				return nil, invalidf("post_processor template uses special token %q that special_tokens does not define", it.SpecialToken.ID)
			}
			if seenA {
				tp.after = append(tp.after, st.IDs...)
			} else {
				tp.before = append(tp.before, st.IDs...)
			}
		default:
			return nil, invalidf("post_processor template item is neither SpecialToken nor Sequence")
		}
	}
	if !seenA {
		return nil, invalidf("post_processor single template has no sequence A")
	}
	return tp, nil
}

// templateProcessing puts fixed ids before and after the sequence.
type templateProcessing struct {
	before, after []int
}

func (tp *templateProcessing) apply(ids []int) []int {
	if len(tp.before) == 0 && len(tp.after) == 0 {
		return ids
	}
	out := make([]int, 0, len(tp.before)+len(ids)+len(tp.after))
	out = append(out, tp.before...)
	out = append(out, ids...)
	return append(out, tp.after...)
}

func (tp *templateProcessing) firstSpecial() (int, bool) {
	if len(tp.before) == 0 {
		return 0, false
	}
	return tp.before[0], true
}

func (tp *templateProcessing) added() []int {
	return append(append([]int(nil), tp.before...), tp.after...)
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

func (seq sequenceProcessor) firstSpecial() (int, bool) {
	for _, p := range seq {
		if id, ok := p.firstSpecial(); ok {
			return id, true
		}
	}
	return 0, false
}
