package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/generate"
)

// interrupts, when set, receives Ctrl-C instead of Ctrl-C cancelling the command: chat uses
// it to stop a reply and stay at the prompt.
var interrupts atomic.Pointer[chan struct{}]

// ctrlCs counts the Ctrl-Cs delivered to a command that takes them (see consoleEOF).
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
  /set temperature T    sampling temperature (0: greedy); also top-k, top-p, min-p, seed, max-tokens
  /show                 the program, the context used and the sampling settings
  /reset                forget the conversation (the system message stays)
  /help                 this list
  /bye                  exit (so do Ctrl-D, and Ctrl-C twice at the prompt)
Ctrl-C during a reply stops it. A message that starts with "/" is a command; start it with
"//" to send it ("//x" sends "/x").`

func newChatCmd() *cobra.Command {
	var (
		system, template, templateFile string
		maxTokens                      int
		threads                        int
		thinking                       bool
		sf                             samplingFlags
	)
	cmd := &cobra.Command{
		Use:   "chat [PROGRAM] [--system TEXT]",
		Short: "Chat interactively with the program's chat template",
		Long: `chat reads one user message per line of standard input, renders the conversation with the
chat template embedded in the program (or --template-file), and streams the reply. The
conversation's earlier turns stay in the session's cache: only new tokens are processed.

A program without a chat template (the embedded stories260K model has none) chats as plain
continuation: each message is appended to the text so far and the model continues it.

` + chatHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxTokens < 1 {
				return usagef("-n %d must be ≥ 1", maxTokens)
			}
			if err := sf.opts.Validate(); err != nil {
				return usageError{err}
			}
			opts := hfstatic.ChatOptions{System: system, TemplateName: template,
				Vars: map[string]any{"enable_thinking": thinking}}
			if templateFile != "" {
				src, err := os.ReadFile(templateFile)
				if err != nil {
					return fmt.Errorf("--template-file: %w", err)
				}
				opts.Template = string(src)
			}
			m, err := openProgram(cmd.Context(), argOr(args, 0), threads)
			if err != nil {
				return err
			}
			defer m.Close()
			c, err := m.public.NewChat(opts)
			if err != nil {
				return err
			}
			defer c.Close()
			sh := &chatShell{chat: c, name: m.name, sf: sf, maxTokens: maxTokens,
				out: cmd.OutOrStdout(), errw: cmd.ErrOrStderr()}
			return sh.run(cmd.Context(), cmd.InOrStdin())
		},
	}
	f := cmd.Flags()
	f.StringVar(&system, "system", "", "system message")
	f.StringVar(&template, "template", "", "named chat template of the program (default: the default one)")
	f.StringVar(&templateFile, "template-file", "", "file with a Jinja chat template (Hugging Face's dialect) to use instead of the program's")
	f.IntVarP(&maxTokens, "max-tokens", "n", 1024, "most new tokens per reply")
	f.IntVar(&threads, "threads", defaultThreads(), "worker threads")
	f.BoolVar(&thinking, "think", false, "set enable_thinking for templates that support it")
	sf.register(f)
	return cmd
}

// chatShell is chat's read-reply loop and its commands.
type chatShell struct {
	chat      *hfstatic.Chat
	name      string
	sf        samplingFlags
	maxTokens int
	out, errw io.Writer
	turn      uint64
}

func (sh *chatShell) run(ctx context.Context, in io.Reader) error {
	intr := make(chan struct{}, 1)
	interrupts.Store(&intr)
	defer interrupts.Store(nil)

	// The reader ends at end of input, or at the next line after the chat ended; while it
	// is blocked in Read, only the process's exit ends it.
	lines := make(chan string)
	readErr := make(chan error, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		for {
			sc := bufio.NewScanner(in)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			seen := ctrlCs.Load()
			for sc.Scan() {
				select {
				case lines <- sc.Text():
				case <-quit:
					return
				}
				seen = ctrlCs.Load()
			}
			if sc.Err() == nil && ctrlCEndsRead(in) && ctrlCSince(seen) {
				continue // a Ctrl-C, not the end of input: read on
			}
			readErr <- sc.Err()
			close(lines)
			return
		}
	}()

	fmt.Fprintf(sh.errw, "chatting with %s: /help for commands, Ctrl-C stops a reply, /bye exits\n", sh.name)
	if !sh.chat.Templated() {
		fmt.Fprintln(sh.errw, "(this program has no chat template: each message continues the text so far; --template-file FILE gives it one)")
	}
	interrupted := false // the last thing at the prompt was a Ctrl-C
	for {
		fmt.Fprint(sh.errw, "> ")
		var line string
		select {
		case <-ctx.Done():
			fmt.Fprintln(sh.errw)
			return ctx.Err()
		case <-intr:
			if interrupted {
				fmt.Fprintln(sh.errw)
				return nil
			}
			interrupted = true
			fmt.Fprintln(sh.errw, "\n(Ctrl-C again, Ctrl-D or /bye to exit)")
			continue
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(sh.errw)
				return <-readErr
			}
			line = l
		}
		interrupted = false
		if strings.HasPrefix(line, "/") && !strings.HasPrefix(line, "//") {
			done, err := sh.command(line)
			if done || err != nil {
				return err
			}
			continue
		}
		line = strings.TrimSpace(strings.TrimPrefix(line, "/"))
		if line == "" {
			continue
		}
		if err := sh.reply(ctx, line, intr); err != nil {
			return err
		}
	}
}

// reply sends line and streams the reply; Ctrl-C stops the reply, not the chat.
func (sh *chatShell) reply(ctx context.Context, line string, intr <-chan struct{}) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-intr:
			cancel()
		case <-stopped:
		}
	}()
	sh.turn++
	opts := sh.sf.opts
	opts.Seed = uint64(sh.sf.seed) + sh.turn
	if sh.sf.seed < 0 {
		opts.Seed = uint64(time.Now().UnixNano())
	}
	res, err := sh.chat.Send(rctx, line, hfstatic.GenerateOptions{MaxTokens: sh.maxTokens, Sampling: opts, Stop: sh.sf.stop,
		OnText: func(s string) error { _, err := io.WriteString(sh.out, s); return err }})
	fmt.Fprintln(sh.out)
	switch {
	case err != nil && errors.Is(err, context.Canceled) && ctx.Err() == nil:
		fmt.Fprintln(sh.errw, "(reply stopped)")
		return nil
	case err != nil:
		return err
	case res.Reason == generate.StopContextFull:
		fmt.Fprintf(sh.errw, "(the context of %d tokens is full: /reset to start over)\n", sh.chat.Context())
	}
	return nil
}

// command runs a /command; done is true when the chat should end.
func (sh *chatShell) command(line string) (done bool, err error) {
	f := strings.Fields(line)
	switch f[0] {
	case "/bye", "/exit", "/quit":
		return true, nil
	case "/help", "/?":
		fmt.Fprintln(sh.errw, chatHelp)
	case "/reset", "/clear":
		if err := sh.chat.Reset(); err != nil {
			return true, err
		}
		if len(sh.chat.Messages()) == 0 {
			fmt.Fprintln(sh.errw, "(conversation cleared)")
		} else {
			fmt.Fprintln(sh.errw, "(conversation cleared; the system message stays)")
		}
	case "/show":
		sh.show()
	case "/set":
		if err := sh.set(f[1:]); err != nil {
			fmt.Fprintf(sh.errw, "%v\n", err)
		}
	default:
		fmt.Fprintf(sh.errw, "unknown command %s (not sent to the model): /help lists the commands\n", f[0])
	}
	return false, nil
}

func (sh *chatShell) show() {
	o := sh.sf.opts
	mode := "chat template"
	if !sh.chat.Templated() {
		mode = "no chat template (plain continuation)"
	}
	seed := "from the clock"
	if sh.sf.seed >= 0 {
		seed = fmt.Sprint(sh.sf.seed)
	}
	fmt.Fprintf(sh.errw, "program      %s, %s\n", sh.name, mode)
	fmt.Fprintf(sh.errw, "context      %d of %d tokens used, %d messages\n", sh.chat.Tokens(), sh.chat.Context(), len(sh.chat.Messages()))
	fmt.Fprintf(sh.errw, "parameters   temperature %g, top-k %d, top-p %g, min-p %g, repeat-penalty %g, seed %s, max-tokens %d\n",
		o.Temperature, o.TopK, o.TopP, o.MinP, o.RepetitionPenalty, seed, sh.maxTokens)
}

// set changes one sampling parameter: "/set temperature 0.5" (ollama's
// "/set parameter temperature 0.5" too).
func (sh *chatShell) set(args []string) error {
	if len(args) > 0 && args[0] == "parameter" {
		args = args[1:]
	}
	if len(args) != 2 {
		return errors.New("usage: /set NAME VALUE, NAME one of temperature, top-k, top-p, min-p, repeat-penalty, seed, max-tokens")
	}
	name, value := strings.ReplaceAll(args[0], "_", "-"), args[1]
	o := sh.sf.opts
	float := func(dst *float32) error {
		v, err := strconv.ParseFloat(value, 32)
		*dst = float32(v)
		return err
	}
	var err error
	switch name {
	case "temperature":
		err = float(&o.Temperature)
	case "top-k":
		o.TopK, err = strconv.Atoi(value)
	case "top-p":
		err = float(&o.TopP)
	case "min-p":
		err = float(&o.MinP)
	case "repeat-penalty":
		err = float(&o.RepetitionPenalty)
	case "seed":
		sh.sf.seed, err = strconv.ParseInt(value, 10, 64)
		if err == nil {
			sh.turn = 0
		}
	case "max-tokens":
		var n int
		if n, err = strconv.Atoi(value); err == nil && n < 1 {
			err = errors.New("must be ≥ 1")
		}
		if err == nil {
			sh.maxTokens = n
		}
	default:
		return fmt.Errorf("cannot set %q: want temperature, top-k, top-p, min-p, repeat-penalty, seed or max-tokens", args[0])
	}
	if err == nil {
		err = o.Validate()
	}
	if err != nil {
		return fmt.Errorf("/set %s %s: %v", args[0], value, err)
	}
	sh.sf.opts = o
	fmt.Fprintf(sh.errw, "set %s to %s\n", name, value)
	return nil
}
