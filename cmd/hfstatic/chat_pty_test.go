//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the test holds the master, the child the slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty slave: %v", err)
	}
	return master, slave
}

// terminal collects what the child writes to its terminal.
type terminal struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *terminal) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until the terminal shows n copies of sub after the first `after` bytes.
func (s *terminal) waitFor(t *testing.T, sub string, after int) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := s.String()
		if i := strings.Index(out[after:], sub); i >= 0 {
			return after + i + len(sub)
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 20 s for %q after byte %d; the terminal shows %q", sub, after, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ptyChild runs this test binary's main with args (TestMain) on a new pseudo-terminal of the
// given width (0: the kernel's default, no width) and TERM, and collects what it writes.
type ptyChild struct {
	master *os.File
	cmd    *exec.Cmd
	term   terminal
	exited chan error
}

func startOnPTY(t *testing.T, args, termType string, width uint16, home string) *ptyChild {
	t.Helper()
	master, slave := openPTY(t)
	t.Cleanup(func() { master.Close() })
	if width > 0 {
		if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: width}); err != nil {
			t.Fatal(err)
		}
	}
	c := &ptyChild{master: master, exited: make(chan error, 1)}
	c.cmd = exec.Command(os.Args[0])
	c.cmd.Env = append(os.Environ(), childArgsEnv+"="+args, "TERM="+termType, "HFSTATIC_HOME="+home)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = slave, slave, slave
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			c.term.mu.Lock()
			c.term.buf.Write(b[:n])
			c.term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
		}
	})
	return c
}

// wait waits for the child to exit and returns its error.
func (c *ptyChild) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.exited:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("still running after 20 s:\n%s", c.term.String())
		return nil
	}
}

// On a real terminal, Ctrl-C stops a reply and keeps chat at the prompt; twice at the prompt
// it exits with status 0. With line editing (a terminal type and a width), liner reads
// Ctrl-C at the prompt as a key; without (TERM=dumb), the kernel's line discipline sends
// SIGINT. The child is this test binary running hfstatic's main.
func TestChatOnATerminal(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "qwen3.hfs")
	// The random Qwen3 reads a 39 MB output matrix per token: a reply of 2000 tokens lasts
	// seconds, long enough to interrupt.
	mustRun(t, "export", qwen3Folder(t), "-o", prog, "--context", "2048", "-q")
	for _, mode := range []struct {
		name, term string
		width      uint16
	}{{"line editing", "xterm", 80}, {"plain", "dumb", 0}} {
		t.Run(mode.name, func(t *testing.T) {
			c := startOnPTY(t, "chat "+prog+" -n 2000 --temperature 0 --threads 1", mode.term, mode.width, t.TempDir())
			term := &c.term
			at := term.waitFor(t, "/help for commands", 0)
			at = term.waitFor(t, "> ", at)
			c.master.WriteString("Hello there\r")
			at = term.waitFor(t, "Hello there", at) // echoed by liner or the terminal
			at = term.waitFor(t, "\n", at)
			// Wait for the reply's first bytes, then press Ctrl-C.
			deadline := time.Now().Add(20 * time.Second)
			for len(term.String()) == at {
				if time.Now().After(deadline) {
					t.Fatalf("no reply after 20 s: %q", term.String())
				}
				time.Sleep(time.Millisecond)
			}
			c.master.WriteString("\x03")
			at = term.waitFor(t, "(reply stopped)", at)
			at = term.waitFor(t, "> ", at)
			c.master.WriteString("/show\r")
			at = term.waitFor(t, "context      ", at)
			at = term.waitFor(t, "> ", at)
			c.master.WriteString("\x03")
			at = term.waitFor(t, "(Ctrl-C again, Ctrl-D or /bye to exit)", at)
			c.master.WriteString("\x03")
			if err := c.wait(t); err != nil {
				t.Errorf("chat exited with %v after two Ctrl-C at the prompt, want status 0\n%s", err, term.String())
			}
			if out := term.String(); strings.Contains(out, "context canceled") {
				t.Errorf("the terminal shows %q", out)
			}
		})
	}
}

// With line editing, the up arrow brings back the last line (history kept across runs in
// the program cache folder), a line ending in \ continues on the next, and the terminal's
// mode is restored at exit.
func TestChatLineEditing(t *testing.T) {
	home := t.TempDir()
	c := startOnPTY(t, "chat -n 4 --temperature 0", "xterm", 80, home)
	before, err := unix.IoctlGetTermios(int(c.master.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	term := &c.term
	at := term.waitFor(t, "> ", 0)
	c.master.WriteString("Once upon a time\r")
	at = term.waitFor(t, ", there was", at) // the reply
	at = term.waitFor(t, "> ", at)
	c.master.WriteString("\x1b[A") // up: the last line again
	at = term.waitFor(t, "Once upon a time", at)
	c.master.WriteString("\x7f\x7f\x7f\x7fday\r") // four backspaces: "Once upon a day"
	at = term.waitFor(t, "> Once upon a day", at)
	at = term.waitFor(t, "> ", at)
	c.master.WriteString("Lily \\\r")
	at = term.waitFor(t, "... ", at)
	c.master.WriteString("and Tom\r")
	at = term.waitFor(t, "> ", at)
	c.master.WriteString("/bye\r")
	if err := c.wait(t); err != nil {
		t.Fatalf("chat: %v\n%s", err, term.String())
	}
	after, err := unix.IoctlGetTermios(int(c.master.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag&(unix.ECHO|unix.ICANON|unix.ISIG) != before.Lflag&(unix.ECHO|unix.ICANON|unix.ISIG) {
		t.Errorf("terminal local modes %#x after chat, %#x before", after.Lflag, before.Lflag)
	}
	hist, err := os.ReadFile(filepath.Join(home, "chat_history"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Once upon a time\nOnce upon a day\nLily \\\nand Tom\n/bye\n"; string(hist) != want {
		t.Errorf("history file %q, want %q; the terminal showed\n%q", hist, want, term.String())
	}
	// The next run starts with that history: the up arrow brings back /bye.
	c = startOnPTY(t, "chat -n 4 --temperature 0", "xterm", 80, home)
	at = c.term.waitFor(t, "> ", 0)
	c.master.WriteString("\x1b[A\r")
	if err := c.wait(t); err != nil {
		t.Fatalf("chat: %v\n%s", err, c.term.String())
	}
}
