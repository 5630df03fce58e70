package onnx_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hfstatic/hfstatic/internal/onnx"
)

// BenchmarkMatMulNBitsVariants times one MatMulNBits node on ONNX Runtime (node, one
// thread) in the forms the graph builder could choose for a Qwen3-0.6B-shape weight: q4
// and q8 blocks of 32 (what the programs hold: graph version 2 uses accuracy_level 4 and
// no zero points), accuracy levels 0 and 1, explicit zero points, and the larger blocks
// (64, 128) a program would need requantizing for. One decode row (M=1) and a prefill
// chunk (M=32); the [151936, 1024] output head does not fit in the caches as the layers'
// matrices do. Reported per variant: µs of CPU per run (and wall µs in the log), over
// -linear-repeats runs.
func BenchmarkMatMulNBitsVariants(b *testing.B) {
	dir := nodeRuntime(b)
	type variant struct {
		M, N, K, bits, blk, acc int64
		zp                      bool
	}
	var vs []variant
	for _, M := range []int64{1, 32} {
		for _, nk := range [][2]int64{{3072, 1024}, {1024, 3072}} {
			for _, bits := range []int64{4, 8} {
				vs = append(vs, variant{M, nk[0], nk[1], bits, 32, 4, false}, variant{M, nk[0], nk[1], bits, 32, 4, true})
			}
		}
		vs = append(vs, variant{M, 3072, 1024, 4, 32, 0, false}, variant{M, 3072, 1024, 4, 32, 1, false},
			variant{M, 3072, 1024, 4, 64, 4, false}, variant{M, 3072, 1024, 4, 128, 4, false},
			variant{M, 3072, 1024, 8, 64, 4, false}, variant{M, 3072, 1024, 8, 128, 4, false})
	}
	vs = append(vs, variant{1, 151936, 1024, 8, 32, 4, false}, variant{1, 151936, 1024, 4, 32, 4, false})
	tmp := b.TempDir()
	var models []string
	names := map[string]string{}
	for _, v := range vs {
		name := fmt.Sprintf("M=%d/N=%d/K=%d/q%d/block=%d/acc=%d/zp=%v", v.M, v.N, v.K, v.bits, v.blk, v.acc, v.zp)
		file := filepath.Join(tmp, fmt.Sprintf("v%d.onnx", len(models)))
		if err := os.WriteFile(file, onnx.MatMulNBitsGraph(v.M, v.N, v.K, v.bits, v.blk, v.acc, v.zp), 0o644); err != nil {
			b.Fatal(err)
		}
		models = append(models, file)
		names[filepath.Base(file)] = name
	}
	repeats := *linearRepeats // b.N is 1 in a benchmark with sub-benchmarks (it was 20 runs whatever -benchtime said)
	cmd := exec.Command("node", append([]string{filepath.Join("testdata", "time.mjs"), "1", fmt.Sprint(repeats)}, models...)...)
	cmd.Env = append(os.Environ(), "HFSTATIC_ORT_NODE_DIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("node time.mjs: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r struct {
			Model string
			Wall  float64 `json:"wall_us"`
			CPU   float64 `json:"cpu_us"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			b.Fatal(err)
		}
		b.Run(names[r.Model], func(b *testing.B) {
			b.ReportMetric(r.CPU, "cpu-µs/run")
			b.ReportMetric(r.Wall, "wall-µs/run")
		})
	}
}
