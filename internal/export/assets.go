package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hfstatic/hfstatic/internal/chat"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// AssetError reports an asset of the checkpoint folder that a program
// would embed and that does not parse, or a chat template that cannot
// render a short chat within chat.DefaultBudget.
type AssetError struct {
	Asset string // e.g. "tokenizer_config.json"
	Err   error
}

func (e *AssetError) Error() string { return fmt.Sprintf("asset %s: %v", e.Asset, e.Err) }
func (e *AssetError) Unwrap() error { return e.Err }

// checkAssets parses every asset before anything is written, so a program
// never carries a file that fails later in serve: tokenizer_config.json is
// a JSON object, tokenizer.json loads as a tokenizer (with that config),
// and each chat template renders a two-message chat within
// chat.DefaultBudget. (A template may refuse the chat with
// raise_exception; that is its right and not an error here.)
func checkAssets(tokJSON, cfgJSON []byte) error {
	if cfgJSON != nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(cfgJSON, &obj); err != nil {
			return &AssetError{Asset: program.AssetTokenizerConfig, Err: fmt.Errorf("not a JSON object: %w", err)}
		}
		if err := checkTemplates(obj["chat_template"], cfgJSON); err != nil {
			return &AssetError{Asset: program.AssetTokenizerConfig, Err: err}
		}
	}
	if tokJSON != nil {
		if _, err := tokenizer.Load(tokJSON, cfgJSON); err != nil {
			return &AssetError{Asset: program.AssetTokenizer, Err: err}
		}
	}
	return nil
}

// checkTemplates test-renders the default template and every named one.
func checkTemplates(raw json.RawMessage, cfgJSON []byte) error {
	names := []string{""}
	var list []struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &list) == nil {
		names = names[:0]
		for _, e := range list {
			names = append(names, e.Name)
		}
	}
	for _, name := range names {
		t, err := chat.FromTokenizerConfig(cfgJSON, name)
		if errors.Is(err, chat.ErrNoTemplate) || errors.Is(err, chat.ErrTemplateNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		_, err = t.RenderContext(context.Background(), chat.Input{AddGenerationPrompt: true, Budget: chat.DefaultBudget,
			Messages: []chat.Message{{Role: "user", Content: "Hello!"}, {Role: "assistant", Content: "Hi, how can I help?"}}})
		var budget *chat.BudgetError
		if errors.As(err, &budget) || errors.Is(err, chat.ErrEngine) {
			return fmt.Errorf("chat template %q cannot render a two-message chat: %w", t.Name(), err)
		}
	}
	return nil
}
