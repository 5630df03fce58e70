package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/calib"
)

// export --calibrate (the embedded text, the same text from a file, and by default for this
// narrow model text the model writes itself) writes a q4 program that accuracy --text
// measures closer to the float program than the uncalibrated one (--calibrate none), and
// reports its bits per weight.
func TestCalibratedExportIsCloserOnText(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "held-out.txt")
	if err := os.WriteFile(text, []byte("Once upon a time, a little dog named Sam found a red ball in the park. He ran and ran with it until the sun went down."), 0o644); err != nil {
		t.Fatal(err)
	}
	calText := filepath.Join(dir, "calib.txt")
	if err := os.WriteFile(calText, []byte(calib.DefaultText()), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.txt")
	if err := os.WriteFile(short, []byte("Lily and Tom went to the beach.\n\nThey built a big castle of sand and laughed."), 0o644); err != nil {
		t.Fatal(err)
	}
	export := func(name string, extra ...string) string {
		prog := filepath.Join(dir, name)
		args := append([]string{"export", storiesDir, "-o", prog, "--context", "128", "--cache-dtype", "f32", "-q"}, extra...)
		_, stderr, err := run(t, "", args...)
		if err != nil {
			t.Fatalf("hfstatic %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		quantized := len(extra) > 0
		if cal := quantized && !slices.Contains(extra, "none"); cal != strings.Contains(stderr, "calibrated on") {
			t.Errorf("export %v said %q on stderr", extra, stderr)
		}
		return prog
	}
	f32 := export("f32.hfs")
	kl := func(prog string) float64 {
		out := mustRun(t, "accuracy", f32, prog, "--text", text)
		m := regexp.MustCompile(`([0-9.]+) bits per weight.*positions (\d+),.*mean KL ([0-9.]+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("accuracy said %q", out)
		}
		if bits, _ := strconv.ParseFloat(m[1], 64); bits < 4.5 || bits > 8 {
			t.Errorf("%s: %s bits per weight, want a q4 program's", prog, m[1])
		}
		if m[2] != "47" {
			t.Errorf("%s: %s positions, want the text's 47 tokens", prog, m[2])
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		return v
	}
	plain := kl(export("q4.hfs", "--weights", "q4", "--calibrate", "none"))
	for _, source := range []string{"default", calText, "self", ""} {
		args := []string{"--weights", "q4", "--calibrate", source}
		if source == "" {
			args = args[:2]
		}
		if cal := kl(export("q4c.hfs", args...)); !(cal < plain) {
			t.Errorf("--calibrate %q: KL %g, uncalibrated %g: want less", source, cal, plain)
		}
	}
	if _, _, err := run(t, "", "export", storiesDir, "-o", filepath.Join(dir, "x.hfs"), "--calibrate", "default", "-q"); err == nil {
		t.Error("--calibrate without a quantized type: no error")
	}
	if _, _, err := run(t, "", "export", storiesDir, "-o", filepath.Join(dir, "x.hfs"), "--weights", "q4", "--calibrate", short, "-q"); err == nil || !strings.Contains(err.Error(), "at least 1000") {
		t.Errorf("--calibrate with 30 tokens: err = %v, want one asking for at least 1000", err)
	}
	if _, _, err := run(t, "", "accuracy", f32, f32, "--text", text, "--prompt", "x"); err == nil {
		t.Error("--text with --prompt: no error")
	}
}
