package main

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Acceptance tests of the runner through the CLI, in process: the stories260K checkpoint is
// exported with C=60, P=16 (a 60-token prompt then takes 3 prefill chunks and 12 decode
// steps: the context-tail fallback) and decode-only with the same context.

var cliPrograms struct {
	dir             string
	prefill, decode string
}

// childArgsEnv makes the test binary run main with these arguments (TestMain).
const childArgsEnv = "HFSTATIC_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childArgsEnv); ok { // a child process runs the command itself
		os.Args = append([]string{"hfstatic"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "hfstatic-runner-cli-")
	if err != nil {
		panic(err)
	}
	cliPrograms.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// exported returns the two programs, exporting them on first use.
func exported(t *testing.T) (prefill, decode string) {
	t.Helper()
	if cliPrograms.prefill == "" {
		p := filepath.Join(cliPrograms.dir, "stories-c60-p16.hfs")
		d := filepath.Join(cliPrograms.dir, "stories-c60-decode.hfs")
		for _, args := range [][]string{
			{"export", "../../models/stories260K", "-o", p, "-q", "--context", "60", "--prefill", "16", "--prefill-logits", "all", "--cache-dtype", "f32"},
			{"export", "../../models/stories260K", "-o", d, "-q", "--context", "60", "--prefill", "0", "--cache-dtype", "f32"},
		} {
			if out, errOut, err := run(t, "", args...); err != nil {
				t.Fatalf("hfstatic %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
			}
		}
		cliPrograms.prefill, cliPrograms.decode = p, d
	}
	return cliPrograms.prefill, cliPrograms.decode
}

func promptIDs(n int) string {
	ids := make([]string, n)
	ids[0] = "1" // BOS
	for i := 1; i < n; i++ {
		ids[i] = strconv.Itoa(3 + (i*37)%500)
	}
	return strings.Join(ids, ",")
}

func readLogits(t *testing.T, path string, rows, vocab int) []float32 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 4*rows*vocab {
		t.Fatalf("%s has %d bytes, want %d rows × %d logits", path, len(raw), rows, vocab)
	}
	out := make([]float32, rows*vocab)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func TestCLILogitsWithTailFallbackMatchDecodeOnly(t *testing.T) {
	prefill, decode := exported(t)
	ids := promptIDs(60)
	var got [2][]float32
	for i, prog := range []string{prefill, decode} {
		out := filepath.Join(t.TempDir(), "logits.f32")
		if _, errOut, err := run(t, "", "logits", prog, "--tokens", ids, "-o", out, "--threads", "1"); err != nil {
			t.Fatalf("logits %s: %v\n%s", prog, err, errOut)
		}
		got[i] = readLogits(t, out, 60, 512)
	}
	worst := 0.0
	for j := range got[0] {
		worst = math.Max(worst, math.Abs(float64(got[0][j]-got[1][j])))
	}
	if !(worst <= 1e-5) {
		t.Errorf("60-token logits: prefill program vs decode-only differ by %.3g > 1e-5", worst)
	}
	t.Logf("max |diff| %.3g", worst)
}

func TestCLIRejectsPromptLongerThanContext(t *testing.T) {
	prefill, decode := exported(t)
	for _, prog := range []string{prefill, decode} {
		_, _, err := run(t, "", "logits", prog, "--tokens", promptIDs(61), "--threads", "1")
		if err == nil || !strings.Contains(err.Error(), "60") {
			t.Errorf("logits with 61 tokens on %s: %v, want an error naming the context 60", filepath.Base(prog), err)
		}
	}
}

func TestCLIGenerateStopsAtContextEnd(t *testing.T) {
	prefill, _ := exported(t)
	out, errOut, err := run(t, "", "generate", prefill, "--tokens", promptIDs(50), "-n", "100", "--ids", "--threads", "1")
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, errOut)
	}
	ids := strings.Split(strings.TrimSpace(out), ",")
	if len(ids) == 0 || len(ids) > 11 {
		t.Errorf("generated %d tokens after a 50-token prompt in a context of 60, want 1..11: %q", len(ids), out)
	}
	eos := len(ids) < 11 && ids[len(ids)-1] == "2"
	if !eos && (!strings.Contains(errOut, "context") || !strings.Contains(errOut, "60")) {
		t.Errorf("stderr %q does not say the context of 60 is full", errOut)
	}
	t.Logf("%d tokens; stderr %q", len(ids), strings.TrimSpace(errOut))
}
