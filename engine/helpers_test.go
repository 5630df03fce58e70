package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"testing"
)

func loadModel(t testing.TB, data []byte, threads int) *Model {
	t.Helper()
	m, err := Load(data, Options{Threads: threads})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// allLogits runs tokens through a fresh session and returns the logits after each token.
func allLogits(t testing.TB, m *Model, tokens []int) [][]float32 {
	t.Helper()
	s, err := m.Runner.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var rows [][]float32
	err = s.AppendEach(context.Background(), tokens, func(i int, row []float32) error {
		rows = append(rows, append([]float32(nil), row...))
		return nil
	})
	if err != nil {
		t.Fatalf("append %d tokens: %v", len(tokens), err)
	}
	return rows
}

func maxAbsDiff(a, b [][]float32) (float64, int) {
	worst, at := 0.0, -1
	for i := range a {
		for j := range a[i] {
			if d := math.Abs(float64(a[i][j] - b[i][j])); d > worst || math.IsNaN(d) {
				worst, at = d, i
			}
		}
	}
	return worst, at
}

type runcReference struct {
	InputIDs  []int `json:"input_ids"`
	GreedyIDs []int `json:"greedy_ids"`
	NVocab    int   `json:"n_vocab"`
}

// readRunc reads run.c's reference ids and logits [64][512].
func readRunc(t testing.TB) (runcReference, [][]float32) {
	t.Helper()
	js, err := os.ReadFile("testdata/stories260K/runc.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref runcReference
	if err := json.Unmarshal(js, &ref); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/stories260K/runc.logits.f32")
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 4*len(ref.InputIDs)*ref.NVocab {
		t.Fatalf("runc.logits.f32 has %d bytes, want %d", len(raw), 4*len(ref.InputIDs)*ref.NVocab)
	}
	rows := make([][]float32, len(ref.InputIDs))
	for i := range rows {
		rows[i] = make([]float32, ref.NVocab)
		for j := range rows[i] {
			rows[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i*ref.NVocab+j):]))
		}
	}
	return ref, rows
}
