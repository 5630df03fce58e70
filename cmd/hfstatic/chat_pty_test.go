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

// On a real terminal, Ctrl-C (the terminal's interrupt character, sent as SIGINT by the
// kernel's line discipline) stops a reply and keeps chat at the prompt; twice at the prompt
// it exits with status 0. The child is this test binary running hfstatic's main.
func TestChatOnATerminal(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "qwen3.hfs")
	// The random Qwen3 reads a 39 MB output matrix per token: a reply of 2000 tokens lasts
	// seconds, long enough to interrupt.
	mustRun(t, "export", qwen3Folder(t), "-o", prog, "--context", "2048", "-q")
	master, slave := openPTY(t)
	defer master.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childArgsEnv+"=chat "+prog+" -n 2000 --temperature 0 --threads 1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var term terminal
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			term.mu.Lock()
			term.buf.Write(b[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	}()

	at := term.waitFor(t, "/help for commands", 0)
	at = term.waitFor(t, "> ", at)
	master.WriteString("Hello there\r")
	at = term.waitFor(t, "Hello there\r\n", at) // the terminal's echo
	// Wait for the reply's first bytes, then press Ctrl-C.
	deadline := time.Now().Add(20 * time.Second)
	for len(term.String()) == at {
		if time.Now().After(deadline) {
			t.Fatalf("no reply after 20 s: %q", term.String())
		}
		time.Sleep(time.Millisecond)
	}
	master.WriteString("\x03")
	at = term.waitFor(t, "(reply stopped)", at)
	at = term.waitFor(t, "> ", at)
	master.WriteString("/show\r")
	at = term.waitFor(t, "context      ", at)
	at = term.waitFor(t, "> ", at)
	master.WriteString("\x03")
	at = term.waitFor(t, "(Ctrl-C again, Ctrl-D or /bye to exit)", at)
	master.WriteString("\x03")
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("chat exited with %v after two Ctrl-C at the prompt, want status 0\n%s", err, term.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("chat still running 20 s after two Ctrl-C at the prompt:\n%s", term.String())
	}
	if out := term.String(); strings.Contains(out, "context canceled") {
		t.Errorf("the terminal shows %q", out)
	}
}
