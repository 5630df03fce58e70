package onnx_test

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/hfstatic/hfstatic/internal/kernels"
	"github.com/hfstatic/hfstatic/internal/onnx"
	"github.com/hfstatic/hfstatic/program"
)

// TestQuantizedLayoutsOnORT pins the q8/q4 conversion to what ONNX Runtime reads: the
// MatMulNBits product of the identity is the dequantized matrix, and the graph's own
// row gather (the embedding path) dequantizes every row, exactly as the Go kernels do.
func TestQuantizedLayoutsOnORT(t *testing.T) {
	dir := nodeRuntime(t)
	for _, c := range []struct {
		typ        kernels.WeightType
		dtype      program.DType
		rows, cols int
	}{{kernels.Q8, program.Q8, 5, 64}, {kernels.Q4, program.Q4, 5, 64}, {kernels.Q4, program.Q4, 3, 40}} {
		t.Run(string(c.dtype), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(c.cols)))
			vals := make([]float32, c.rows*c.cols)
			for i := range vals {
				vals[i] = float32(rng.NormFloat64())
			}
			data := make([]byte, c.rows*c.typ.RowBytes(c.cols))
			if err := kernels.Quantize(c.typ, data, vals, c.rows, c.cols); err != nil {
				t.Fatal(err)
			}
			tensor := program.Tensor{Name: "w", DType: c.dtype, Shape: program.Shape{c.rows, c.cols}, Size: int64(len(data))}
			product, rows, inits := onnx.QuantGraphs([]program.Tensor{tensor}, "w", c.cols)
			gdir := t.TempDir()
			for name, b := range map[string][]byte{"product.onnx": product, "rows.onnx": rows} {
				if err := os.WriteFile(filepath.Join(gdir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, in := range inits {
				b, err := onnx.InitializerData(in, tensor, data)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(gdir, in.Location), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// want[r][c]: the Go kernels' dequantized matrix
			mat := kernels.Matrix{Type: c.typ, Rows: c.rows, Cols: c.cols, Data: data}
			want := make([]float32, c.rows*c.cols)
			for r := range c.rows {
				kernels.DequantizeRow(mat, r, want[r*c.cols:(r+1)*c.cols])
			}
			eye := make([]float32, c.cols*c.cols)
			for i := range c.cols {
				eye[i*c.cols+i] = 1
			}
			ids := make([]int64, c.cols) // every row, then row 0 again
			for i := range ids {
				ids[i] = int64(i % c.rows)
			}
			out := runNode(t, dir, []nodeCase{
				{Model: filepath.Join(gdir, "product.onnx"), Outputs: []string{"y"},
					Feeds: []feed{{Name: "x", Type: "float32", Dims: []int{c.cols, c.cols}, Data: b64(f32Bytes(eye))}}},
				{Model: filepath.Join(gdir, "rows.onnx"), Outputs: []string{"y"},
					Feeds: []feed{{Name: "ids", Type: "int64", Dims: []int{c.cols}, Data: b64(i64Bytes(ids))}}},
			})
			prod, gathered := asF32(out[0]["y"]), asF32(out[1]["y"])
			for r := range c.rows {
				for k := range c.cols {
					if w, got := want[r*c.cols+k], prod[k*c.rows+r]; math.Abs(float64(w-got)) > 1e-6*math.Abs(float64(w)) {
						t.Fatalf("product: W[%d][%d] = %v, ORT %v", r, k, w, got)
					}
				}
			}
			for i, id := range ids {
				for k := range c.cols {
					if w, got := want[int(id)*c.cols+k], gathered[i*c.cols+k]; w != got {
						t.Fatalf("rows: W[%d][%d] = %v, graph %v", id, k, w, got)
					}
				}
			}
		})
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func f32Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func i64Bytes(v []int64) []byte {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	return b
}
