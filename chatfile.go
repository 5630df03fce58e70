package hfstatic

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/hfstatic/hfstatic/runner"
)

// A conversation file (Chat.Save) is one line of JSON, then the session's state as
// runner.Session.Save writes it (bound to the program's fingerprint):
//
//	{"format":"hfstatic-chat","version":1,"messages":[{"role":"system","content":"…"},…],"session_bytes":N}\n
//	N bytes of session file
const (
	chatFileFormat  = "hfstatic-chat"
	chatFileVersion = 1
	// maxChatHeader bounds the JSON line: the messages of a full context of text, and more.
	maxChatHeader = 64 << 20
)

// ErrChatFile is wrapped by every error about a conversation file that cannot be read.
var ErrChatFile = errors.New("not a conversation file")

type chatFileHeader struct {
	Format       string        `json:"format"`
	Version      int           `json:"version"`
	Messages     []chatFileMsg `json:"messages"`
	SessionBytes int64         `json:"session_bytes"`
}

type chatFileMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Save writes the conversation to w: its messages, then its session's state, so that Load
// continues it without running its tokens again.
func (c *Chat) Save(w io.Writer) error {
	var sess bytes.Buffer
	if err := c.sess.Save(&sess); err != nil {
		return err
	}
	h := chatFileHeader{Format: chatFileFormat, Version: chatFileVersion, SessionBytes: int64(sess.Len())}
	for _, m := range c.msgs {
		h.Messages = append(h.Messages, chatFileMsg{Role: m.Role, Content: m.Content})
	}
	line, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if _, err := w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	if _, err := w.Write(sess.Bytes()); err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	return nil
}

// Load replaces the conversation with one Save wrote: its messages (a system message among
// them becomes the one Reset keeps) and, when the file was saved from this program, its
// session's state. A file saved from another program (runner.ErrWrongProgram) still loads
// its messages, which the next Send runs again; restored reports whether the state was. On
// any other error the conversation is unchanged.
func (c *Chat) Load(r io.Reader) (restored bool, err error) {
	br := bufio.NewReader(io.LimitReader(r, maxChatHeader+1))
	line, err := br.ReadBytes('\n')
	if err != nil {
		return false, fmt.Errorf("%w: no header line: %v", ErrChatFile, err)
	}
	var h chatFileHeader
	if err := json.Unmarshal(line, &h); err != nil || h.Format != chatFileFormat {
		return false, fmt.Errorf("%w: the first line is not an %s header", ErrChatFile, chatFileFormat)
	}
	if h.Version != chatFileVersion {
		return false, fmt.Errorf("%w: version %d (this build reads version %d)", ErrChatFile, h.Version, chatFileVersion)
	}
	msgs := make([]Message, len(h.Messages))
	system := ""
	for i, m := range h.Messages {
		switch m.Role {
		case "system":
			if i != 0 {
				return false, fmt.Errorf("%w: message %d: a system message comes first", ErrChatFile, i+1)
			}
			system = m.Content
		case "user", "assistant":
		default:
			return false, fmt.Errorf("%w: message %d: role %q, want system, user or assistant", ErrChatFile, i+1, m.Role)
		}
		msgs[i] = Message{Role: m.Role, Content: m.Content}
	}
	// The session part follows the header line in the same stream.
	rest := io.MultiReader(br, r)
	state := io.LimitReader(rest, h.SessionBytes)
	err = c.sess.Restore(state)
	var sfe *runner.SessionFileError
	switch {
	case err == nil:
		restored = true
	case errors.Is(err, runner.ErrWrongProgram):
		// Another program's state: the messages alone, run again at the next Send.
		if err := c.sess.Reset(); err != nil {
			return false, err
		}
	case errors.As(err, &sfe):
		return false, fmt.Errorf("%w: %v", ErrChatFile, err)
	default:
		return false, err
	}
	c.msgs = msgs
	c.opts.System = system
	return restored, nil
}
