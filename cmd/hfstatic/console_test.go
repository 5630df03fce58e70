package main

import (
	"io"
	"strings"
	"testing"
)

// ctrlCReader ends its first read as a Windows console does on Ctrl-C: the interrupt is
// delivered and the read returns no data and io.EOF. Then it reads rest.
type ctrlCReader struct {
	pressed bool
	rest    io.Reader
}

func (r *ctrlCReader) Read(p []byte) (int, error) {
	if !r.pressed {
		r.pressed = true
		if !interrupt() {
			panic("no command takes Ctrl-C")
		}
		return 0, io.EOF
	}
	return r.rest.Read(p)
}

// On a console where Ctrl-C ends the pending read, chat takes it as a Ctrl-C (at the prompt:
// the hint to press it again) and reads on, instead of ending as at the end of input.
func TestChatReadsOnAfterCtrlCEndedTheRead(t *testing.T) {
	defer func(f func(io.Reader) bool) { ctrlCEndsRead = f }(ctrlCEndsRead)
	ctrlCEndsRead = func(io.Reader) bool { return true }
	root := newRoot()
	var out, errb strings.Builder
	root.SetArgs([]string{"chat", "--threads", "1"})
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(&ctrlCReader{rest: strings.NewReader("/show\n")})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "(Ctrl-C again") || !strings.Contains(errb.String(), "context") {
		t.Fatalf("chat said %q, want the Ctrl-C hint and then /show's report", errb.String())
	}
}
