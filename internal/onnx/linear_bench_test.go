package onnx_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hfstatic/hfstatic/internal/onnx"
)

var (
	linearRounds  = flag.Int("linear-rounds", 3, "BenchmarkLinearForms: rounds over every form, alternating")
	linearRepeats = flag.Int("linear-repeats", 100, "BenchmarkLinearForms: timed runs per form and round")
	linearMatch   = flag.String("linear-match", "", "BenchmarkLinearForms: only the forms whose name matches this regular expression")
)

// BenchmarkLinearForms times the ways of writing one linear layer y = x Wᵀ on ONNX Runtime
// (node, one thread, a process per form and round, the forms alternating: every other round
// in reverse order) for
// the Qwen3-0.6B-shape matrices [3072, 1024] and [1024, 3072], one row (decode) and 32
// (prefill): q4/q8 as MatMulNBits (the builder's) or DequantizeLinear + MatMul (ORT free to
// fuse or fold it; with session.disable_quant_qdq, which lets constant folding turn it into
// an f32 initializer; at optimization level basic, which neither folds nor fuses it; the int8
// weight a graph input, dequantized at every run), and f32 as Gemm(transB=1) over [N, K]
// (the builder's), MatMul over a [K, N] copy, or Transpose + MatMul, each with ORT's
// prepacking on and off; and the f32 output head [151936, 1024] at one row as Gemm or
// MatMul or com.microsoft FusedMatMul(transB=1), prepacked or not (-linear-match 'N=151936' for those alone). Reported per form: the median over the rounds of the CPU µs per
// run, the largest error against a float64 product over the same dequantized weights
// relative to the largest |y|, and the process's peak RSS; the rounds and ORT's optimized
// graph (its op types) are printed.
func BenchmarkLinearForms(b *testing.B) {
	dir := nodeRuntime(b)
	match, err := regexp.Compile(*linearMatch)
	if err != nil {
		b.Fatal(err)
	}
	type variant struct {
		form       string
		M, N, K    int64
		bits       int
		label      string
		level      string
		extra      map[string]string
		file, name string
	}
	noPack := map[string]string{"disable_prepacking": "1"}
	var vs []variant
	for _, M := range []int64{1, 32} {
		for _, nk := range [][2]int64{{3072, 1024}, {1024, 3072}} {
			add := func(form string, bits int, label, level string, extra map[string]string) {
				vs = append(vs, variant{form: form, M: M, N: nk[0], K: nk[1], bits: bits, label: label, level: level, extra: extra})
			}
			for _, bits := range []int{4, 8} {
				add("nbits", bits, "MatMulNBits", "", nil)
				add("dq", bits, "DQ+MatMul", "", nil)
				add("dq", bits, "DQ+MatMul/disable_quant_qdq", "", map[string]string{"disable_quant_qdq": "1"})
				add("dq", bits, "DQ+MatMul/level=basic", "basic", nil)
				if bits == 8 {
					add("dq-input", bits, "DQ+MatMul/W-input", "", nil)
				}
			}
			for _, f := range [][2]string{{"gemm", "Gemm(transB=1)"}, {"matmul", "MatMul[K,N]"}, {"transpose", "Transpose+MatMul"}} {
				add(f[0], 0, f[1]+"/prepack", "", nil)
				add(f[0], 0, f[1]+"/no-prepack", "", noPack)
			}
		}
	}
	// the output head [151936, 1024] at one row: 622 MB of f32, read from memory, not the caches
	for _, f := range [][2]string{{"gemm", "Gemm(transB=1)"}, {"matmul", "MatMul[K,N]"}, {"fusedmatmul", "FusedMatMul(transB=1)"}} {
		vs = append(vs, variant{form: f[0], M: 1, N: 151936, K: 1024, label: f[1] + "/prepack"},
			variant{form: f[0], M: 1, N: 151936, K: 1024, label: f[1] + "/no-prepack", extra: noPack})
	}
	tmp := b.TempDir()
	for i := range vs {
		v := &vs[i]
		w := "f32"
		if v.bits != 0 {
			w = fmt.Sprintf("q%d", v.bits)
		}
		v.name = fmt.Sprintf("M=%d/N=%d/K=%d/%s/%s", v.M, v.N, v.K, w, v.label)
		if !match.MatchString(v.name) {
			continue
		}
		lf := onnx.LinearFormGraph(v.form, v.M, v.N, v.K, v.bits)
		v.file = filepath.Join(tmp, fmt.Sprintf("v%d.onnx", i))
		ref := make([]byte, 8*len(lf.Ref))
		for j, r := range lf.Ref {
			binary.LittleEndian.PutUint64(ref[8*j:], math.Float64bits(r))
		}
		side := map[string]any{"ref": filepath.Base(v.file) + ".ref"}
		opts := map[string]any{}
		if v.level != "" {
			opts["graphOptimizationLevel"] = v.level
		}
		if v.extra != nil {
			opts["extra"] = map[string]any{"session": v.extra}
		}
		side["options"] = opts
		var ins []map[string]any
		for j, in := range lf.Inputs {
			f := fmt.Sprintf("%s.in%d", filepath.Base(v.file), j)
			if err := os.WriteFile(filepath.Join(tmp, f), in.Data, 0o644); err != nil {
				b.Fatal(err)
			}
			ins = append(ins, map[string]any{"name": in.Name, "type": in.Type, "dims": in.Dims, "file": f})
		}
		side["inputs"] = ins
		js, _ := json.Marshal(side)
		for f, data := range map[string][]byte{v.file: lf.Model, v.file + ".ref": ref, v.file + ".json": js} {
			if err := os.WriteFile(f, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	type result struct {
		Wall   float64        `json:"wall_us"`
		CPU    float64        `json:"cpu_us"`
		Peak   float64        `json:"peak_mib"`
		Rss0   float64        `json:"rss0_mib"`
		MaxErr float64        `json:"max_err"`
		RelErr float64        `json:"rel_err"`
		Ops    map[string]int `json:"ops"`
	}
	repeats := *linearRepeats // b.N is 1 in a benchmark that has sub-benchmarks
	vs = slices.DeleteFunc(vs, func(v variant) bool { return !match.MatchString(v.name) })
	rs := make([][]result, len(vs))
	for round := range *linearRounds {
		for j := range vs {
			i := j
			if round%2 == 1 { // odd rounds in reverse: every pair of forms runs in both orders
				i = len(vs) - 1 - j
			}
			v := vs[i]
			cmd := exec.Command("node", filepath.Join("testdata", "time.mjs"), "1", fmt.Sprint(repeats), v.file)
			cmd.Env = append(os.Environ(), "HFSTATIC_ORT_NODE_DIR="+dir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("%s: node time.mjs: %v\n%s", v.name, err, stderr.String())
			}
			var r result
			if err := json.Unmarshal(out, &r); err != nil {
				b.Fatalf("%s: %v: %s", v.name, err, out)
			}
			rs[i] = append(rs[i], r)
			if round == 0 {
				ops := make([]string, 0, len(r.Ops))
				for op, n := range r.Ops {
					ops = append(ops, fmt.Sprintf("%s×%d", op, n))
				}
				slices.Sort(ops)
				fmt.Printf("# %s: ORT's graph %s; |y−ref| %.3g (%.3g of max |y|)\n", v.name, strings.Join(ops, " "), r.MaxErr, r.RelErr)
			}
		}
	}
	for i, v := range vs {
		cpu := make([]float64, 0, len(rs[i]))
		peak := make([]float64, 0, len(rs[i]))
		var rounds []string
		for _, r := range rs[i] {
			cpu = append(cpu, r.CPU)
			peak = append(peak, r.Peak-r.Rss0)
			rounds = append(rounds, fmt.Sprintf("%.0f", r.CPU))
		}
		fmt.Printf("# %s: CPU µs per round %s\n", v.name, strings.Join(rounds, " "))
		b.Run(v.name, func(b *testing.B) {
			b.ReportMetric(median(cpu), "cpu-µs/run")
			b.ReportMetric(median(peak), "peak-MiB")
			b.ReportMetric(rs[i][0].RelErr, "rel-err")
		})
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
