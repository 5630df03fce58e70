package hfstatic

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hfstatic/hfstatic/internal/chat"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// Message is one turn of a conversation.
type Message struct {
	// Role is "system", "user" or "assistant".
	Role    string
	Content string
}

// ChatOptions configure a conversation. The zero value uses the program's default chat
// template, or plain continuation when it has none.
type ChatOptions struct {
	// System is the system message; "" means none.
	System string
	// Template is Jinja chat-template source (Hugging Face's dialect) used instead of the
	// program's; "" uses the program's.
	Template string
	// TemplateName selects one of the program's named templates; "" the default one.
	TemplateName string
	// Vars are extra template variables, such as "enable_thinking".
	Vars map[string]any
}

// Chat is a conversation held in one session: each Send processes only the tokens the
// conversation gained since the last reply. A Chat is not safe for concurrent use.
//
// Without a chat template (the embedded model has none), a Chat is plain continuation: the
// conversation is the messages' text run together, and each reply continues it.
type Chat struct {
	m    *Model
	sess *runner.Session
	tmpl *chat.Template // nil: plain continuation
	opts ChatOptions
	eos  []int
	msgs []Message
}

// NewChat starts a conversation. It fails only for a program without a tokenizer, or a
// template that does not compile or is not in the program.
func (m *Model) NewChat(opts ChatOptions) (*Chat, error) {
	if m.eng.Runner == nil {
		return nil, m.notGenerative()
	}
	if m.tok == nil {
		return nil, m.tokErr
	}
	c := &Chat{m: m, opts: opts, eos: m.eng.Runner.Metadata().Tokens.EOSIDs()}
	switch {
	case opts.Template != "":
		t, err := chat.Parse(opts.Template)
		if err != nil {
			return nil, fmt.Errorf("ChatOptions.Template: %w", err)
		}
		c.tmpl = t
	default:
		t, err := m.template(opts.TemplateName)
		if err != nil {
			return nil, err
		}
		c.tmpl = t
	}
	if c.tmpl != nil {
		if id, ok := m.tok.TokenID(c.tmpl.EOSToken()); ok && !slices.Contains(c.eos, id) {
			c.eos = append(c.eos, id)
		}
	}
	sess, err := m.eng.Runner.NewSession()
	if err != nil {
		return nil, err
	}
	c.sess = sess
	c.Reset()
	return c, nil
}

// template returns the program's chat template, or nil when it has none and name is "".
// A template that is there but broken is an error, not plain continuation.
func (m *Model) template(name string) (*chat.Template, error) {
	cfg, ok := m.eng.File.Asset(program.AssetTokenizerConfig)
	if !ok {
		if name != "" {
			return nil, fmt.Errorf("%w: chat template %q asked for, and the program has no tokenizer_config.json", ErrNoChatTemplate, name)
		}
		return nil, nil
	}
	t, err := chat.FromTokenizerConfig(cfg, name)
	switch {
	case err == nil:
		return t, nil
	case name == "" && errors.Is(err, chat.ErrNoTemplate):
		return nil, nil
	case name != "":
		return nil, fmt.Errorf("chat template %q: %w", name, err)
	}
	return nil, err
}

// Templated reports whether the conversation is rendered with a chat template (false: plain
// continuation).
func (c *Chat) Templated() bool { return c.tmpl != nil }

// Messages returns the conversation so far, the system message first.
func (c *Chat) Messages() []Message { return slices.Clone(c.msgs) }

// Tokens is how many positions of the program's context the conversation fills.
func (c *Chat) Tokens() int { return c.sess.Position() }

// Context is the program's context: the most tokens a conversation can hold.
func (c *Chat) Context() int { return c.m.eng.Runner.Metadata().MaxContext }

// Reset forgets the conversation, keeping the system message.
func (c *Chat) Reset() error {
	c.msgs = c.msgs[:0]
	if c.opts.System != "" {
		c.msgs = append(c.msgs, Message{Role: "system", Content: c.opts.System})
	}
	return c.sess.Reset()
}

// Send adds a user message and generates the reply, which joins the conversation. When
// generation ends with an error (a cancelled ctx among them), what was generated so far
// still joins it as the reply, and the next Send continues from there.
func (c *Chat) Send(ctx context.Context, content string, opts GenerateOptions) (Result, error) {
	c.msgs = append(c.msgs, Message{Role: "user", Content: content})
	res, err := c.reply(ctx, opts)
	if err != nil && res.Text == "" && len(res.Tokens) == 0 {
		c.msgs = c.msgs[:len(c.msgs)-1] // nothing happened: the message was not sent
		return res, err
	}
	c.msgs = append(c.msgs, Message{Role: "assistant", Content: res.Text})
	return res, err
}

// reply renders the conversation, runs the tokens the session does not hold yet and
// generates.
func (c *Chat) reply(ctx context.Context, opts GenerateOptions) (Result, error) {
	prompt, err := c.render()
	if err != nil {
		return Result{}, err
	}
	if err := c.keepPrefix(prompt); err != nil {
		return Result{}, err
	}
	return c.m.run(ctx, c.sess, prompt[c.sess.Position():], c.eos, opts)
}

// render returns the conversation's tokens, ready for the reply.
func (c *Chat) render() ([]int, error) {
	if c.tmpl == nil {
		var b strings.Builder
		for _, msg := range c.msgs {
			if b.Len() > 0 && !endsInSpace(b.String()) && !startsWithSpace(msg.Content) {
				b.WriteByte(' ')
			}
			b.WriteString(msg.Content)
		}
		return c.m.tok.Encode(b.String(), true)
	}
	msgs := make([]chat.Message, len(c.msgs))
	for i, m := range c.msgs {
		msgs[i] = chat.Message{Role: m.Role, Content: m.Content}
	}
	text, err := c.tmpl.Render(chat.Input{Messages: msgs, AddGenerationPrompt: true, Vars: c.opts.Vars})
	if err != nil {
		return nil, err
	}
	return c.m.tok.Encode(text, false)
}

func endsInSpace(s string) bool { return s != "" && strings.ContainsAny(s[len(s)-1:], " \n\t") }

func startsWithSpace(s string) bool { return s != "" && strings.ContainsAny(s[:1], " \n\t") }

// keepPrefix keeps the session's tokens up to where prompt departs from them, always
// leaving at least one prompt token to run; it rewinds, or starts over when a
// sliding-window ring no longer holds what the rewind needs or an interrupted step left the
// session unusable.
func (c *Chat) keepPrefix(prompt []int) error {
	if len(prompt) == 0 {
		return errors.New("the conversation has no tokens")
	}
	h := c.sess.Tokens()
	k := 0
	for k < len(h) && k < len(prompt)-1 && h[k] == prompt[k] {
		k++
	}
	// Rewind(len(h)) changes nothing, but fails on a session an interrupted step poisoned.
	if err := c.sess.Rewind(k); err != nil {
		return c.sess.Reset()
	}
	return nil
}

// Close releases the conversation's session.
func (c *Chat) Close() error { return c.sess.Close() }

// Chat generates the assistant's reply to messages in a new session.
func (m *Model) Chat(ctx context.Context, messages []Message, opts GenerateOptions) (Result, error) {
	c, err := m.NewChat(ChatOptions{})
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	c.msgs = append(c.msgs[:0], messages...)
	return c.reply(ctx, opts)
}
