package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/internal/chat"
)

func newChatCmd() *cobra.Command {
	var (
		system, template string
		maxTokens        int
		threads          int
		thinking         bool
		sf               samplingFlags
	)
	cmd := &cobra.Command{
		Use:   "chat PROGRAM [--system TEXT]",
		Short: "Chat interactively with the program's chat template",
		Long: `chat reads one user message per line of standard input, renders the conversation with the
chat template embedded in the program, and streams the reply. The conversation's earlier turns
stay in the session's cache: only new tokens are processed. Commands: /reset, /exit.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sampler, err := sf.sampler()
			if err != nil {
				return err
			}
			m, err := openProgram(cmd.Context(), argOr(args, 0), threads)
			if err != nil {
				return err
			}
			defer m.Close()
			tok, err := m.Tokenizer()
			if err != nil {
				return err
			}
			tmpl, err := m.ChatTemplate(template)
			if err != nil {
				return fmt.Errorf("%w; use generate for plain text models", err)
			}
			eos := m.Runner.Metadata().Tokens.EOSIDs()
			if id, ok := tok.TokenID(tmpl.EOSToken()); ok && !slices.Contains(eos, id) {
				eos = append(eos, id)
			}
			sess, err := m.Runner.NewSession()
			if err != nil {
				return err
			}
			defer sess.Close()
			var msgs []chat.Message
			if system != "" {
				msgs = append(msgs, chat.Message{Role: "system", Content: system})
			}
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			in := bufio.NewScanner(cmd.InOrStdin())
			in.Buffer(make([]byte, 1<<20), 1<<20)
			for {
				fmt.Fprint(errw, "> ")
				if !in.Scan() {
					fmt.Fprintln(errw)
					return in.Err()
				}
				line := strings.TrimSpace(in.Text())
				switch line {
				case "":
					continue
				case "/exit", "/quit":
					return nil
				case "/reset":
					msgs = msgs[:0]
					if system != "" {
						msgs = append(msgs, chat.Message{Role: "system", Content: system})
					}
					if err := sess.Reset(); err != nil {
						return err
					}
					continue
				}
				msgs = append(msgs, chat.Message{Role: "user", Content: line})
				text, err := tmpl.Render(chat.Input{Messages: msgs, AddGenerationPrompt: true,
					Vars: map[string]any{"enable_thinking": thinking}})
				if err != nil {
					return err
				}
				prompt, err := tok.Encode(text, false)
				if err != nil {
					return err
				}
				// Keep the cached conversation up to where the new prompt departs from it
				// (always leaving at least one new token to run); rewind, or recompute when a
				// sliding-window ring no longer holds what the rewind needs.
				h := sess.Tokens()
				k := 0
				for k < len(h) && k < len(prompt)-1 && h[k] == prompt[k] {
					k++
				}
				if k < len(h) {
					if err := sess.Rewind(k); err != nil {
						if err := sess.Reset(); err != nil {
							return err
						}
					}
				}
				prompt = prompt[sess.Position():]
				var reply strings.Builder
				emit, err := newTextEmitter(&teeWriter{w: out, b: &reply}, tok, prompt, sf.stop, eos)
				if err != nil {
					return err
				}
				res, err := generate.Run(cmd.Context(), sess, prompt, generate.Options{
					MaxTokens: maxTokens, Sampler: sampler, EOS: eos, OnToken: emit.token, Vocab: vocabOf(tok)})
				emit.finish(res.Reason == generate.StopCondition)
				fmt.Fprintln(out)
				if err != nil {
					return err
				}
				if res.Reason == generate.StopContextFull {
					fmt.Fprintf(errw, "(the context of %d positions is full: /reset to start over)\n", m.Runner.Metadata().MaxContext)
				}
				msgs = append(msgs, chat.Message{Role: "assistant", Content: reply.String()})
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&system, "system", "", "system message")
	f.StringVar(&template, "template", "", "named chat template (default: the default one)")
	f.IntVarP(&maxTokens, "max-tokens", "n", 1024, "most new tokens per reply")
	f.IntVar(&threads, "threads", defaultThreads(), "worker threads")
	f.BoolVar(&thinking, "think", false, "set enable_thinking for templates that support it")
	sf.register(f)
	return cmd
}

// teeWriter writes to w and records what it wrote.
type teeWriter struct {
	w io.Writer
	b *strings.Builder
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.b.Write(p)
	return t.w.Write(p)
}
