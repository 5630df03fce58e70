package engine

import (
	"errors"
	"fmt"

	"github.com/hfstatic/hfstatic/internal/chat"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// ErrNoTokenizer is returned for a program exported without tokenizer files.
var ErrNoTokenizer = errors.New("program carries no tokenizer (export it from a folder with tokenizer.json)")

// ErrNoChatTemplate is returned for a program whose tokenizer_config.json has no chat template.
var ErrNoChatTemplate = errors.New("program carries no chat template")

// Tokenizer loads the tokenizer embedded in the program.
func (m *Model) Tokenizer() (*tokenizer.Tokenizer, error) {
	tj, ok := m.File.Asset(program.AssetTokenizer)
	if !ok {
		return nil, ErrNoTokenizer
	}
	cfg, _ := m.File.Asset(program.AssetTokenizerConfig)
	t, err := tokenizer.Load(tj, cfg)
	if err != nil {
		return nil, fmt.Errorf("embedded tokenizer: %w", err)
	}
	return t, nil
}

// ChatTemplate loads the chat template embedded in the program's tokenizer_config.json
// (name "" selects the default template).
func (m *Model) ChatTemplate(name string) (*chat.Template, error) {
	cfg, ok := m.File.Asset(program.AssetTokenizerConfig)
	if !ok {
		return nil, ErrNoChatTemplate
	}
	t, err := chat.FromTokenizerConfig(cfg, name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoChatTemplate, err)
	}
	return t, nil
}
