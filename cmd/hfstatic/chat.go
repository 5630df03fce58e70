package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hfstatic/hfstatic"
)

// interrupts, when set, receives Ctrl-C instead of Ctrl-C cancelling the command: chat uses
// it to stop a reply and stay at the prompt.
var interrupts atomic.Pointer[chan struct{}]

// ctrlCs counts the Ctrl-Cs delivered to a command that takes them (see ctrlCSince).
var ctrlCs atomic.Uint64

// interrupt delivers a Ctrl-C to the command that takes them, reporting false when none does.
func interrupt() bool {
	p := interrupts.Load()
	if p == nil {
		return false
	}
	ctrlCs.Add(1)
	select {
	case *p <- struct{}{}:
	default: // one is pending already
	}
	return true
}

const chatHelp = `Commands:
  /set temperature T    sampling temperature (0: greedy); also top-k, top-p, min-p, repeat-penalty, seed, max-tokens
  /show                 the program, the system message, the context used and the sampling settings
  /save FILE            write the conversation (its messages and the session's cache) to FILE
  /load FILE            continue a conversation /save wrote (its system message replaces --system)
  /reset                forget the conversation (the system message stays)
  /help                 this list
  /bye                  exit (so do Ctrl-D, and Ctrl-C twice at the prompt)
A line ending in \ continues on the next line; """ on a line of its own starts and ends a message
of several lines. On a terminal, the arrow keys edit the line and walk the history (kept in
the program cache folder). Ctrl-C during a reply stops it. A message that starts with "/" is a
command; start it with "//" to send it ("//x" sends "/x").`

// chatFlags are the flags of a conversation, shared by chat and run.
type chatFlags struct {
	system, template, templateFile string
	maxTokens, threads             int
	thinking                       bool
	sf                             samplingFlags
}

func (c *chatFlags) register(f *pflag.FlagSet, maxTokens int) {
	f.StringVar(&c.system, "system", "", "system message")
	f.StringVar(&c.template, "template", "", "named chat template of the program (default: the default one)")
	f.StringVar(&c.templateFile, "template-file", "", "file with a Jinja chat template (Hugging Face's dialect) to use instead of the program's")
	f.IntVarP(&c.maxTokens, "max-tokens", "n", maxTokens, "most new tokens per reply")
	f.IntVar(&c.threads, "threads", defaultThreads(), "worker threads")
	f.BoolVar(&c.thinking, "think", false, "set enable_thinking for templates that support it")
	c.sf.register(f)
}

// options checks the flags and reads --template-file.
func (c *chatFlags) options() (hfstatic.ChatOptions, error) {
	if c.maxTokens < 1 {
		return hfstatic.ChatOptions{}, usagef("-n %d must be ≥ 1", c.maxTokens)
	}
	if err := c.sf.opts.Validate(); err != nil {
		return hfstatic.ChatOptions{}, usageError{err}
	}
	if c.template != "" && c.templateFile != "" {
		return hfstatic.ChatOptions{}, usagef("--template names one of the program's templates, --template-file gives one: pass one")
	}
	opts := hfstatic.ChatOptions{System: c.system, TemplateName: c.template,
		Vars: map[string]any{"enable_thinking": c.thinking}}
	if c.templateFile != "" {
		src, err := os.ReadFile(c.templateFile)
		if err != nil {
			return opts, fmt.Errorf("--template-file: %w", err)
		}
		opts.Template = string(src)
	}
	return opts, nil
}

// generateOptions are the options of one reply; turn numbers the replies from 0, so that a
// fixed --seed gives each reply its own stream of random numbers, the first reply the one
// generate --seed gives.
func (c *chatFlags) generateOptions(turn uint64, onText func(string) error) hfstatic.GenerateOptions {
	opts := c.sf.opts
	opts.Seed = uint64(c.sf.seed) + turn
	if c.sf.seed < 0 {
		opts.Seed = uint64(time.Now().UnixNano())
	}
	return hfstatic.GenerateOptions{MaxTokens: c.maxTokens, Sampling: opts, Stop: c.sf.stop, OnText: onText}
}

func newChatCmd() *cobra.Command {
	var (
		cf chatFlags
		ef exportFlags
	)
	cmd := &cobra.Command{
		Use:   "chat [PROGRAM] [--system TEXT]",
		Short: "Chat interactively with the program's chat template",
		Long: `chat reads one user message per line of standard input, renders the conversation with the
chat template embedded in the program (or --template-file), and streams the reply. The
conversation's earlier turns stay in the session's cache: only new tokens are processed.
PROGRAM is a program file, a Hugging Face folder or a model name (ORG/NAME[@REVISION], exported
once as run does); without it, the embedded stories260K model.

A program without a chat template (the embedded stories260K model has none) chats as plain
continuation: each message is appended to the text so far and the model continues it.

` + chatHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := cf.options()
			if err != nil {
				return err
			}
			m, err := openProgram(cmd, argOr(args, 0), cf.threads, &ef)
			if err != nil {
				return err
			}
			defer m.Close()
			return chatWith(cmd, m, cf, opts)
		},
	}
	cf.register(cmd.Flags(), 1024)
	ef.register(cmd.Flags())
	return cmd
}

// chatWith runs the interactive chat on an opened program.
func chatWith(cmd *cobra.Command, m *loaded, cf chatFlags, opts hfstatic.ChatOptions) error {
	c, err := m.public.NewChat(opts)
	if err != nil {
		return err
	}
	defer c.Close()
	sh := &chatShell{chat: c, name: m.name, cf: cf, out: cmd.OutOrStdout(), errw: cmd.ErrOrStderr()}
	lines := newLineReader(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
	defer lines.Close()
	return sh.run(cmd.Context(), lines)
}
