package onnx_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hfstatic/hfstatic/internal/align"
	xexec "github.com/hfstatic/hfstatic/internal/exec"
	"github.com/hfstatic/hfstatic/internal/onnx"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// The graphs are checked outside Go: testdata/check.mjs runs them with ONNX Runtime's own
// Node.js binding (onnxruntime-node), found in $HFSTATIC_ORT_NODE_DIR (a folder holding
// node_modules/onnxruntime-node; .ci/run installs it). Without it the tests skip, unless
// $CI is set, where they fail.
const ortNodeEnv = "HFSTATIC_ORT_NODE_DIR"

// nodeRuntime returns the folder holding onnxruntime-node, skipping the test (failing it
// under CI) when it is missing.
func nodeRuntime(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(ortNodeEnv)
	var why string
	switch {
	case dir == "":
		why = ortNodeEnv + " is not set"
	default:
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "onnxruntime-node", "package.json")); err != nil {
			why = fmt.Sprintf("%s=%s holds no node_modules/onnxruntime-node", ortNodeEnv, dir)
		} else if _, err := exec.LookPath("node"); err != nil {
			why = "node is not on PATH"
		}
	}
	if why == "" {
		return dir
	}
	msg := why + ": install it with `mkdir -p /tmp/ortnpm && cd /tmp/ortnpm && npm install --ignore-scripts onnxruntime-node@1.30.0` and set " + ortNodeEnv + "=/tmp/ortnpm"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// feed is one input of a case for check.mjs.
type feed struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Dims []int  `json:"dims"`
	Data string `json:"data,omitempty"` // base64; empty: zeros
}

type nodeCase struct {
	Model   string   `json:"model"`
	Feeds   []feed   `json:"feeds"`
	Outputs []string `json:"outputs"`
}

type nodeTensor struct {
	Dims []int  `json:"dims"`
	Data string `json:"data"`
}

// runNode runs cases through check.mjs and returns each case's outputs.
func runNode(t testing.TB, dir string, cases []nodeCase) []map[string][]byte {
	t.Helper()
	js, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(path, js, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join("testdata", "check.mjs"), path)
	cmd.Env = append(os.Environ(), ortNodeEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("node: %d cases in %v", len(cases), time.Since(start))
	if err != nil {
		t.Fatalf("node check.mjs: %v\n%s", err, stderr.String())
	}
	var res []map[string]nodeTensor
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node check.mjs output: %v", err)
	}
	got := make([]map[string][]byte, len(res))
	for i, r := range res {
		got[i] = map[string][]byte{}
		for name, tn := range r {
			b, err := base64.StdEncoding.DecodeString(tn.Data)
			if err != nil {
				t.Fatal(err)
			}
			got[i][name] = b
		}
	}
	return got
}

// extract writes f's payload into a new folder and returns it.
func extract(t testing.TB, f *program.File) string {
	t.Helper()
	dir := t.TempDir()
	err := onnx.Extract(f, func(name string, data []byte) error {
		return os.WriteFile(filepath.Join(dir, name), data, 0o644)
	})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	return dir
}

// recorded is one step the Go executor ran: its method, inputs (caches as they were
// before the step) and outputs (logits, caches after).
type recorded struct {
	method string
	in     map[string][]byte
	out    map[string][]byte
}

// recorder is a runner.Executor that runs the Go executor and records every step.
type recorder struct {
	p     *xexec.Program
	steps []recorded
}

func (r *recorder) Bind(method string, bufs map[string][]byte) (runner.Step, error) {
	m, ok := r.p.Method(method)
	if !ok {
		return nil, fmt.Errorf("no method %q", method)
	}
	s, err := m.Bind(bufs)
	if err != nil {
		return nil, err
	}
	return &recordingStep{r: r, spec: m.Spec(), s: s, bufs: bufs}, nil
}

type recordingStep struct {
	r    *recorder
	spec *program.Method
	s    *xexec.Step
	bufs map[string][]byte
}

func (s *recordingStep) Run(ctx context.Context) error {
	rec := recorded{method: s.spec.Name, in: map[string][]byte{}, out: map[string][]byte{}}
	for _, io := range s.spec.Inputs {
		rec.in[io.Name] = bytes.Clone(s.bufs[io.Name])
	}
	if err := s.s.Run(ctx); err != nil {
		return err
	}
	for _, io := range s.spec.Outputs {
		rec.out[io.Name] = bytes.Clone(s.bufs[io.Name])
	}
	s.r.steps = append(s.r.steps, rec)
	return nil
}

// decodeProgram decodes program bytes (aligned as the executor needs).
func decodeProgram(t testing.TB, data []byte) *program.File {
	t.Helper()
	buf := align.Bytes(len(data))
	copy(buf, data)
	f, err := program.Decode(buf, program.DecodeOptions{})
	if err != nil {
		t.Fatalf("decode program: %v", err)
	}
	return f
}

// runGo appends the prompts to a fresh session of the Go executor, one Append each (so
// prefill and decode steps both run), and returns every step it ran.
func runGo(t testing.TB, f *program.File, prompts ...[]int) []recorded {
	t.Helper()
	x, err := xexec.Load(f, xexec.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rec := &recorder{p: x}
	r, err := runner.New(&f.Manifest, f.Fingerprint, rec, runner.Options{Allocator: runner.HeapAllocator{}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range prompts {
		if err := s.Append(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	return rec.steps
}

// onnxType names a program dtype as check.mjs does.
func onnxType(d program.DType) string {
	switch d {
	case program.I64:
		return "int64"
	case program.Bool:
		return "bool"
	case program.F16:
		return "float16"
	}
	return "float32"
}

// caseOf is the check.mjs case running step's method graph from dir on its inputs.
func caseOf(f *program.File, dir string, st recorded) nodeCase {
	m, _ := f.Manifest.Method(st.method)
	c := nodeCase{Model: filepath.Join(dir, st.method+".onnx"), Outputs: []string{program.Logits}}
	for _, io := range m.Inputs {
		if io.DType == program.I64 && len(io.Shape) == 0 {
			continue // counters are not graph inputs
		}
		c.Feeds = append(c.Feeds, feed{Name: io.Name, Type: onnxType(io.DType), Dims: io.Shape,
			Data: base64.StdEncoding.EncodeToString(st.in[io.Name])})
	}
	for l := range f.Manifest.Metadata.Layers {
		c.Outputs = append(c.Outputs, onnx.RowsName(program.KCache(l)), onnx.RowsName(program.VCache(l)))
	}
	return c
}
