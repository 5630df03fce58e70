package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// fileJSON is tokenizer.json split by parseFile; components stay raw until
// their "type" is known.
type fileJSON struct {
	AddedTokens   []addedTokenJSON
	Normalizer    json.RawMessage
	PreTokenizer  json.RawMessage
	PostProcessor json.RawMessage
	Decoder       json.RawMessage
	Model         json.RawMessage
}

type addedTokenJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"` // absent: !special, as in Hugging Face
	Special    bool   `json:"special"`
}

func (a addedTokenJSON) normalized() bool {
	if a.Normalized == nil {
		return !a.Special
	}
	return *a.Normalized
}

type modelJSON struct {
	Type                    string          `json:"type"`
	raw                     json.RawMessage // the model's fields but vocab and merges
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Dropout                 *float64        `json:"dropout"`
}

// configJSON is the part of tokenizer_config.json this package reads.
type configJSON struct {
	AddBOSToken    *bool           `json:"add_bos_token"`
	AddEOSToken    *bool           `json:"add_eos_token"`
	BOSToken       json.RawMessage `json:"bos_token"`
	EOSToken       json.RawMessage `json:"eos_token"`
	TokenizerClass string          `json:"tokenizer_class"`
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// Load builds a Tokenizer from the bytes of a Hugging Face tokenizer.json and,
// optionally, tokenizer_config.json (nil when absent). The config supplies the
// BOS/EOS token strings and, for Llama and Gemma tokenizer classes, the
// add_bos_token/add_eos_token flags that transformers applies on top of the
// post-processor.
func Load(tokenizerJSON, tokenizerConfigJSON []byte) (_ *Tokenizer, err error) {
	defer catchRegex(&err) // added tokens are normalized
	f, mj, err := parseFile(tokenizerJSON)
	if err != nil {
		return nil, err
	}
	if mj.Dropout != nil && *mj.Dropout != 0 {
		return nil, invalidf("model: BPE dropout %v is not deterministic; set it to null", *mj.Dropout)
	}

	t := &Tokenizer{}
	if t.normalizer, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.preTokenizer, t.byteLevel, err = parsePreTokenizerChain(f.PreTokenizer); err != nil {
		return nil, err
	}
	t.keepsBytes = keepsBytes(t.preTokenizer)
	if t.decoder, err = parseDecoder(f.Decoder); err != nil {
		return nil, err
	}
	t.byteFallbackDecoder = hasByteFallback(t.decoder)
	switch mj.Type {
	case "WordPiece":
		t.model, err = newWordPiece(mj.raw, mj.Vocab)
	case "Unigram":
		t.model, err = newUnigram(mj.raw, mj.Vocab)
	default:
		var merges [][2]string
		if merges, err = parseMerges(mj.Merges); err == nil {
			t.model, err = newBPE(mj, merges, t.byteLevel)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := t.buildVocab(f.AddedTokens); err != nil {
		return nil, err
	}
	if t.post, err = parsePostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	for _, id := range t.post.added() {
		if _, ok := t.Token(id); !ok {
			return nil, invalidf("post_processor adds token id %d, which is not in the vocabulary", id)
		}
	}
	if t.added, err = newAddedVocab(f.AddedTokens, t.normalizer); err != nil {
		return nil, err
	}
	if tokenizerConfigJSON != nil {
		if err := t.applyConfig(tokenizerConfigJSON); err != nil {
			return nil, err
		}
	}
	if !t.hasBOS {
		t.bos, t.hasBOS = t.post.firstSpecial()
	}
	return t, nil
}

// parseFile splits tokenizer.json into its components. The vocabulary and
// merges are left raw for the fast scanner; everything else goes through
// encoding/json.
func parseFile(data []byte) (*fileJSON, *modelJSON, error) {
	fields, err := objectFields(data)
	if err != nil {
		return nil, nil, invalidf("tokenizer.json: %v", err)
	}
	f := &fileJSON{Normalizer: fields["normalizer"], PreTokenizer: fields["pre_tokenizer"],
		PostProcessor: fields["post_processor"], Decoder: fields["decoder"], Model: fields["model"]}
	if raw := fields["added_tokens"]; !isNull(raw) {
		if err := json.Unmarshal(raw, &f.AddedTokens); err != nil {
			return nil, nil, invalidf("added_tokens: %v", err)
		}
	}
	if isNull(f.Model) {
		return nil, nil, invalidf("tokenizer.json has no model")
	}
	modelFields, err := objectFields(f.Model)
	if err != nil {
		return nil, nil, invalidf("model: %v", err)
	}
	modelType := ""
	if raw, ok := modelFields["type"]; ok {
		if err := json.Unmarshal(raw, &modelType); err != nil {
			return nil, nil, invalidf("model.type: %v", err)
		}
	}
	switch modelType {
	case "BPE", "WordPiece", "Unigram":
	case "": // older files omit the type of BPE models
		modelType = "BPE"
	default:
		return nil, nil, &UnsupportedError{Component: "model", Type: modelType}
	}
	mj := &modelJSON{Vocab: modelFields["vocab"], Merges: modelFields["merges"]}
	delete(modelFields, "vocab")
	delete(modelFields, "merges")
	small, err := json.Marshal(modelFields)
	if err == nil {
		err = json.Unmarshal(small, mj)
	}
	if err != nil {
		return nil, nil, invalidf("model: %v", err)
	}
	mj.Type, mj.raw = modelType, small
	if mj.Merges == nil && modelType == "BPE" {
		return nil, nil, invalidf("BPE model has no merges")
	}
	return f, mj, nil
}

// LoadFS loads tokenizer.json and, if present, tokenizer_config.json from
// the root of fsys (for example os.DirFS of a Hugging Face model folder).
func LoadFS(fsys fs.FS) (*Tokenizer, error) {
	data, err := fs.ReadFile(fsys, "tokenizer.json")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: reading tokenizer.json: %w", err)
	}
	config, err := fs.ReadFile(fsys, "tokenizer_config.json")
	if errors.Is(err, fs.ErrNotExist) {
		config, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer: reading tokenizer_config.json: %w", err)
	}
	return Load(data, config)
}

// parseMerges accepts both merge formats: "a b" strings and ["a", "b"] pairs.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	s := &jsonScanner{data: raw}
	out := make([][2]string, 0, len(raw)/48) // a rough guess; append grows it
	err := s.list(func() error {
		i := len(out)
		if s.next() == '"' {
			str, err := s.str()
			if err != nil {
				return err
			}
			a, b, ok := strings.Cut(str, " ")
			if !ok || strings.Contains(b, " ") {
				return fmt.Errorf("merge %d = %q is not two tokens separated by one space", i, str)
			}
			out = append(out, [2]string{a, b})
			return nil
		}
		var pair []string
		err := s.list(func() error {
			tok, err := s.str()
			pair = append(pair, tok)
			return err
		})
		if err != nil || len(pair) != 2 {
			return fmt.Errorf("merge %d is neither \"a b\" nor [a, b]", i)
		}
		out = append(out, [2]string{pair[0], pair[1]})
		return nil
	})
	if err != nil {
		return nil, invalidf("model.merges: %v", err)
	}
	return out, nil
}

// buildVocab makes the id → token table from the model vocabulary and the
// added tokens (which win, as in Hugging Face).
func (t *Tokenizer) buildVocab(added []addedTokenJSON) error {
	idToToken, hasID := t.model.tokens()
	n := len(idToToken)
	for _, a := range added {
		if a.ID < 0 || a.ID > maxTokenID {
			return invalidf("added token %q has id %d outside 0..%d", a.Content, a.ID, maxTokenID)
		}
		n = max(n, a.ID+1)
	}
	if err := checkIDSpace(n, len(idToToken)+len(added)); err != nil {
		return err
	}
	t.tokens = make([]string, n)
	t.known = make([]bool, n)
	t.special = make([]bool, n)
	for id, tok := range idToToken {
		if hasID[id] {
			t.tokens[id], t.known[id] = tok, true
		}
	}
	t.ids = make(map[string]int, len(added))
	for _, a := range added {
		t.tokens[a.ID], t.known[a.ID] = a.Content, true
		t.special[a.ID] = a.Special
		t.ids[a.Content] = a.ID
	}
	return nil
}

// maxTokenID bounds token ids so that a corrupt file cannot make Load
// allocate gigabytes (real vocabularies are below 2^20).
const maxTokenID = 1 << 24

// checkIDSpace refuses ids spread far beyond the tokens that use them: the
// tables are as long as the largest id, so a 65-byte file naming one token
// id 2^24-1 made Load allocate 560 MB. Real vocabularies are dense (added
// tokens follow the model's); ids may reach twice the tokens plus 65,536.
func checkIDSpace(n, tokens int) error {
	if limit := 2*tokens + 1<<16; n > limit {
		return invalidf("token ids reach %d for %d tokens (at most %d: a vocabulary's ids must be nearly dense)", n-1, tokens, limit)
	}
	return nil
}

// tokenID finds the id of a token string: added tokens first, then the model.
func (t *Tokenizer) tokenID(tok string) (int, bool) {
	if id, ok := t.ids[tok]; ok {
		return id, true
	}
	return t.model.id(tok)
}

func (t *Tokenizer) applyConfig(raw []byte) error {
	var c configJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return invalidf("tokenizer_config.json: %v", err)
	}
	bosTok, err := configToken(c.BOSToken)
	if err != nil {
		return invalidf("tokenizer_config.json bos_token: %v", err)
	}
	eosTok, err := configToken(c.EOSToken)
	if err != nil {
		return invalidf("tokenizer_config.json eos_token: %v", err)
	}
	bos, eos := -1, -1
	if bosTok != "" {
		id, ok := t.tokenID(bosTok)
		if !ok {
			return invalidf("tokenizer_config.json bos_token %q is not in the vocabulary", bosTok)
		}
		bos, t.bos, t.hasBOS = id, id, true
	}
	if eosTok != "" {
		id, ok := t.tokenID(eosTok)
		if !ok {
			return invalidf("tokenizer_config.json eos_token %q is not in the vocabulary", eosTok)
		}
		eos = id
		t.eos = []int{id}
	}
	// transformers' Llama and Gemma fast tokenizers rebuild the template
	// from these flags; other classes leave tokenizer.json's post-processor.
	if !rebuildsTemplate(c.TokenizerClass) || (c.AddBOSToken == nil && c.AddEOSToken == nil) {
		return nil
	}
	addBOS := c.AddBOSToken == nil || *c.AddBOSToken
	addEOS := c.AddEOSToken != nil && *c.AddEOSToken
	if (addBOS && bos < 0) || (addEOS && eos < 0) {
		return invalidf("tokenizer_config.json asks for add_bos_token=%v add_eos_token=%v but does not name those tokens", addBOS, addEOS)
	}
	var before, after []int
	if addBOS {
		before = []int{bos}
	}
	if addEOS {
		after = []int{eos}
	}
	t.post = prefixSuffix(before, after)
	return nil
}

func rebuildsTemplate(class string) bool {
	switch strings.TrimSuffix(class, "Fast") {
	case "LlamaTokenizer", "CodeLlamaTokenizer", "GemmaTokenizer":
		return true
	}
	return false
}

// configToken reads a special-token entry that is either a string, null, or
// an AddedToken object with "content".
func configToken(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("neither a string nor an object with content: %s", raw)
	}
	return obj.Content, nil
}
