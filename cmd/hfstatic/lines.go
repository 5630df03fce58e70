package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/peterh/liner"
	"golang.org/x/term"
)

// lineResult is one line the user typed, or why there is none.
type lineResult struct {
	line string
	err  error // io.EOF at the end of input; errInterrupted for Ctrl-C typed at the prompt
}

// lineReader reads the user's lines one at a time in a goroutine, so that chat can watch
// Ctrl-C and its context while a read blocks. On a terminal the line is edited with
// github.com/peterh/liner (arrow keys, history kept across runs, Ctrl-C at the prompt);
// elsewhere (a pipe, a file, a test) lines are read as they come.
type lineReader struct {
	read    func(prompt string) (string, error) // blocks; shows the prompt
	reshow  func(prompt string)                 // shows the prompt again for a pending read
	close   func() error
	pending chan lineResult // the read under way, nil when none
}

// next returns the channel that delivers the next line, starting a read unless one is
// already under way (whose prompt is then shown again). The caller sets pending to nil once
// it has received from the channel.
func (r *lineReader) next(prompt string) <-chan lineResult {
	if r.pending != nil {
		if r.reshow != nil {
			r.reshow(prompt)
		}
		return r.pending
	}
	ch := make(chan lineResult, 1)
	r.pending = ch
	go func() {
		line, err := r.read(prompt)
		ch <- lineResult{line, err}
	}()
	return ch
}

// Close restores the terminal and saves the history.
func (r *lineReader) Close() error { return r.close() }

// newLineReader reads in from a terminal with line editing when in and out are the
// process's terminal, else plainly, showing prompts on errw.
func newLineReader(in io.Reader, out, errw io.Writer) *lineReader {
	if onTerminal(in, out) {
		return terminalLines()
	}
	return plainLines(in, errw)
}

// onTerminal reports whether in and out are terminals liner can drive: a terminal type it
// knows (TERM on Unix) and a width.
func onTerminal(in io.Reader, out io.Writer) bool {
	fin, ok1 := in.(*os.File)
	fout, ok2 := out.(*os.File)
	if !ok1 || !ok2 || !term.IsTerminal(int(fin.Fd())) || !term.IsTerminal(int(fout.Fd())) || !liner.TerminalSupported() {
		return false
	}
	width, _, err := term.GetSize(int(fout.Fd()))
	return err == nil && width > 0
}

func plainLines(in io.Reader, errw io.Writer) *lineReader {
	scanner := func() *bufio.Scanner {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		return sc
	}
	sc, seen := scanner(), ctrlCs.Load()
	show := func(prompt string) { fmt.Fprint(errw, prompt) }
	return &lineReader{
		read: func(prompt string) (string, error) {
			show(prompt)
			for {
				if sc.Scan() {
					seen = ctrlCs.Load()
					return sc.Text(), nil
				}
				if err := sc.Err(); err != nil {
					return "", err
				}
				if ctrlCEndsRead(in) && ctrlCSince(seen) {
					// A Ctrl-C on a Windows console ended the read as if the input had
					// ended; its signal reached the chat on its own: read on.
					sc, seen = scanner(), ctrlCs.Load()
					continue
				}
				return "", io.EOF
			}
		},
		reshow: show,
		close:  func() error { return nil },
	}
}

func terminalLines() *lineReader {
	st := liner.NewLiner()
	st.SetCtrlCAborts(true)
	st.SetMultiLineMode(true) // a long line wraps instead of scrolling sideways
	path := historyPath()
	if f, err := os.Open(path); err == nil {
		st.ReadHistory(f)
		f.Close()
	}
	return &lineReader{
		read: func(prompt string) (string, error) {
			line, err := st.Prompt(prompt)
			if errors.Is(err, liner.ErrPromptAborted) {
				return "", errInterrupted
			}
			if err == nil && strings.TrimSpace(line) != "" {
				st.AppendHistory(line)
			}
			return line, err
		},
		close: func() error {
			if path != "" && os.MkdirAll(filepath.Dir(path), 0o755) == nil {
				if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err == nil {
					st.WriteHistory(f) // liner keeps the last liner.HistoryLimit lines
					f.Close()
				}
			}
			return st.Close()
		},
	}
}

// historyPath is the chat history file: chat_history in the program cache folder ("" when
// there is none).
func historyPath() string {
	root, err := programCache()
	if err != nil {
		return ""
	}
	return filepath.Join(root, "chat_history")
}
