package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/generate"
)

// chatShell is chat's read-reply loop and its commands.
type chatShell struct {
	chat      *hfstatic.Chat
	name      string
	cf        chatFlags
	out, errw io.Writer
	turn      uint64
	intr      chan struct{} // Ctrl-C sent as a signal
}

func (sh *chatShell) run(ctx context.Context, lines *lineReader) error {
	sh.intr = make(chan struct{}, 1)
	interrupts.Store(&sh.intr)
	defer interrupts.Store(nil)

	fmt.Fprintf(sh.errw, "chatting with %s: /help for commands, Ctrl-C stops a reply, /bye exits\n", sh.name)
	if !sh.chat.Templated() {
		fmt.Fprintln(sh.errw, "(this program has no chat template: each message continues the text so far; --template-file FILE gives it one)")
	}
	interrupted := false // the last thing at the prompt was a Ctrl-C
	for {
		msg, typed, err := sh.readMessage(ctx, lines)
		switch {
		case errors.Is(err, errInterrupted):
			if interrupted {
				fmt.Fprintln(sh.errw)
				return nil
			}
			interrupted = true
			fmt.Fprintln(sh.errw, "\n(Ctrl-C again, Ctrl-D or /bye to exit)")
			continue
		case errors.Is(err, io.EOF):
			fmt.Fprintln(sh.errw)
			return nil
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			fmt.Fprintln(sh.errw)
			return err
		case err != nil:
			return err
		}
		interrupted = false
		if typed && strings.HasPrefix(msg, "/") && !strings.HasPrefix(msg, "//") {
			done, err := sh.command(msg)
			if done || err != nil {
				return err
			}
			continue
		}
		if typed {
			msg = strings.TrimSpace(strings.TrimPrefix(msg, "/"))
		}
		if strings.TrimSpace(msg) == "" {
			continue
		}
		if err := sh.reply(ctx, msg); err != nil {
			return err
		}
	}
}

// errInterrupted is Ctrl-C at the prompt.
var errInterrupted = errors.New("interrupted")

// readLine reads one line, returning early for Ctrl-C sent as a signal (errInterrupted) and
// for the end of ctx; the read itself then stays pending for the next call.
func (sh *chatShell) readLine(ctx context.Context, lines *lineReader, prompt string) (string, error) {
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-sh.intr:
		return "", errInterrupted
	case r := <-lines.next(prompt):
		lines.pending = nil
		return r.line, r.err
	}
}

// readMessage reads one message: a line; the lines joined while they end in "\"; or the
// lines between a line that starts with """ and one that ends with it (the text beside the
// quotes included). typed reports a message of one line, which may be a command.
func (sh *chatShell) readMessage(ctx context.Context, lines *lineReader) (msg string, typed bool, err error) {
	line, err := sh.readLine(ctx, lines, "> ")
	if err != nil {
		return "", false, err
	}
	const quotes = `"""`
	if first, ok := strings.CutPrefix(strings.TrimLeft(line, " \t"), quotes); ok {
		if body, closed := strings.CutSuffix(strings.TrimRight(first, " \t"), quotes); closed {
			return body, false, nil // """text""" on one line
		}
		var parts []string
		if first != "" {
			parts = append(parts, first)
		}
		for {
			l, err := sh.readLine(ctx, lines, "... ")
			if errors.Is(err, io.EOF) {
				return strings.Join(parts, "\n"), false, nil // an unclosed block at the end of input
			}
			if err != nil {
				return "", false, err // Ctrl-C drops the block
			}
			if last, closed := strings.CutSuffix(strings.TrimRight(l, " \t"), quotes); closed {
				return strings.Join(append(parts, last), "\n"), false, nil
			}
			parts = append(parts, l)
		}
	}
	if !strings.HasSuffix(line, `\`) {
		return line, true, nil
	}
	var parts []string
	for strings.HasSuffix(line, `\`) {
		parts = append(parts, strings.TrimSuffix(line, `\`))
		l, err := sh.readLine(ctx, lines, "... ")
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", false, err
		}
		line = l
		if !strings.HasSuffix(line, `\`) {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, "\n"), false, nil
}

// reply sends msg and streams the reply; Ctrl-C stops the reply, not the chat.
func (sh *chatShell) reply(ctx context.Context, msg string) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-sh.intr:
			cancel()
		case <-stopped:
		}
	}()
	res, err := sh.chat.Send(rctx, msg, sh.cf.generateOptions(sh.turn,
		func(s string) error { _, err := io.WriteString(sh.out, s); return err }))
	sh.turn++
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
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	switch name {
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
		if err := sh.set(strings.Fields(arg)); err != nil {
			fmt.Fprintf(sh.errw, "%v\n", err)
		}
	case "/save":
		if err := sh.save(arg); err != nil {
			fmt.Fprintf(sh.errw, "/save: %v\n", err)
		}
	case "/load":
		if err := sh.load(arg); err != nil {
			fmt.Fprintf(sh.errw, "/load: %v\n", err)
		}
	default:
		fmt.Fprintf(sh.errw, "unknown command %s (not sent to the model): /help lists the commands\n", name)
	}
	return false, nil
}

func (sh *chatShell) show() {
	o := sh.cf.sf.opts
	mode := "chat template"
	if !sh.chat.Templated() {
		mode = "no chat template (plain continuation)"
	}
	seed := "from the clock"
	if sh.cf.sf.seed >= 0 {
		seed = fmt.Sprint(sh.cf.sf.seed)
	}
	system := "(none)"
	if msgs := sh.chat.Messages(); len(msgs) > 0 && msgs[0].Role == "system" {
		system = strings.ReplaceAll(msgs[0].Content, "\n", "\n             ")
	}
	fmt.Fprintf(sh.errw, "program      %s, %s\n", sh.name, mode)
	fmt.Fprintf(sh.errw, "system       %s\n", system)
	fmt.Fprintf(sh.errw, "context      %d of %d tokens used, %d messages\n", sh.chat.Tokens(), sh.chat.Context(), len(sh.chat.Messages()))
	fmt.Fprintf(sh.errw, "parameters   temperature %g, top-k %d, top-p %g, min-p %g, repeat-penalty %g, seed %s, max-tokens %d\n",
		o.Temperature, o.TopK, o.TopP, o.MinP, o.RepetitionPenalty, seed, sh.cf.maxTokens)
}

// save writes the conversation to path (readable by everyone, like the programs export
// writes), through a temporary file so that a failed save leaves an older file whole.
func (sh *chatShell) save(path string) error {
	if path == "" {
		return errors.New("usage: /save FILE")
	}
	path = expandHome(path)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".hfstatic-chat-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	defer os.Remove(tmp.Name())
	if err := sh.chat.Save(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	fmt.Fprintf(sh.errw, "(saved %d messages and %d tokens to %s)\n", len(sh.chat.Messages()), sh.chat.Tokens(), path)
	return nil
}

func (sh *chatShell) load(path string) error {
	if path == "" {
		return errors.New("usage: /load FILE")
	}
	path = expandHome(path)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	restored, err := sh.chat.Load(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	n := len(sh.chat.Messages())
	if restored {
		fmt.Fprintf(sh.errw, "(loaded %d messages and %d tokens from %s)\n", n, sh.chat.Tokens(), path)
	} else {
		fmt.Fprintf(sh.errw, "(loaded %d messages from %s; it was saved from another program, so they run again with the next message)\n", n, path)
	}
	return nil
}

// expandHome turns a leading ~/ into the home folder, as a shell would.
func expandHome(path string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return path
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
	o := sh.cf.sf.opts
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
		sh.cf.sf.seed, err = strconv.ParseInt(value, 10, 64)
		if err == nil {
			sh.turn = 0
		}
	case "max-tokens":
		var n int
		if n, err = strconv.Atoi(value); err == nil && n < 1 {
			err = errors.New("must be ≥ 1")
		}
		if err == nil {
			sh.cf.maxTokens = n
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
	sh.cf.sf.opts = o
	fmt.Fprintf(sh.errw, "set %s to %s\n", name, value)
	return nil
}
