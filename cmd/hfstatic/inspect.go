package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/internal/onnx"
	"github.com/hfstatic/hfstatic/program"
)

// inspectReport is the --json output of inspect; its field names are a stable interface.
type inspectReport struct {
	Program      string           `json:"program"`
	Fingerprint  string           `json:"fingerprint"`
	FileBytes    int64            `json:"file_bytes"`
	Contract     string           `json:"contract"`
	Version      int              `json:"version"`
	Context      int              `json:"context"`
	VocabSize    int              `json:"vocab_size"`
	CacheDType   program.DType    `json:"cache_dtype"`
	Window       int              `json:"sliding_window"`
	Layout       string           `json:"sliding_layout"`
	Tokens       program.Tokens   `json:"tokens"`
	Source       program.Source   `json:"source"`
	Methods      []inspectMethod  `json:"methods"`
	Layers       []inspectLayer   `json:"layers"`
	SessionBytes int64            `json:"session_bytes"`
	CacheBytes   int64            `json:"cache_bytes"`
	WeightBytes  map[string]int64 `json:"weight_bytes_by_dtype"`
	Tensors      []inspectTensor  `json:"tensors"`
	Assets       []string         `json:"assets"`
	// Parameters counts the model's weights (every tensor but the RoPE tables).
	Parameters int64 `json:"parameters"`
	// Tokenizer and ChatTemplate say whether the program carries them.
	Tokenizer    bool `json:"tokenizer"`
	ChatTemplate bool `json:"chat_template"`
}

type inspectMethod struct {
	Name   string       `json:"name"`
	Step   int          `json:"step"`
	Logits string       `json:"logits"`
	Ops    int          `json:"ops"`
	Inputs []program.IO `json:"inputs"`
}

type inspectLayer struct {
	Index      int    `json:"index"`
	Type       string `json:"type"`
	KVHeads    int    `json:"kv_heads"`
	KHeadDim   int    `json:"k_head_dim"`
	VHeadDim   int    `json:"v_head_dim"`
	CacheRows  int    `json:"cache_rows"`
	CacheBytes int64  `json:"cache_bytes"`
}

type inspectTensor struct {
	Name  string        `json:"name"`
	DType program.DType `json:"dtype"`
	Shape program.Shape `json:"shape"`
	Bytes int64         `json:"bytes"`
}

func newInspectCmd() *cobra.Command {
	var (
		asJSON, tensors bool
		extractONNX     string
		ef              exportFlags
	)
	cmd := &cobra.Command{
		Use:   "inspect [PROGRAM]",
		Short: "Show a program's contract, methods, per-layer caches, sizes and source",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := openProgram(cmd, argOr(args, 0), 1, &ef)
			if err != nil {
				return err
			}
			defer m.Close()
			if extractONNX != "" {
				return extractGraphs(cmd.OutOrStdout(), m.File, extractONNX)
			}
			rep := buildInspect(m)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printInspect(cmd.OutOrStdout(), rep, tensors)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&tensors, "tensors", false, "list every tensor")
	cmd.Flags().StringVar(&extractONNX, "extract-onnx", "", "write the program's ONNX graphs (export --delegate onnx) into `DIR` as METHOD.onnx with their weights as external data files, for any ONNX tool")
	ef.register(cmd.Flags())
	return cmd
}

func argOr(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

func buildInspect(m *loaded) inspectReport {
	man := &m.File.Manifest
	md := man.Metadata
	rep := inspectReport{Program: m.name, Fingerprint: m.File.Fingerprint, FileBytes: m.File.Size(),
		Contract: md.Contract, Version: md.Version, Context: md.MaxContext, VocabSize: md.VocabSize,
		CacheDType: md.CacheDType, Window: md.SlidingWindow, Layout: string(md.SlidingLayout),
		Tokens: md.Tokens, Source: md.Source, SessionBytes: m.Runner.SessionBytes(),
		WeightBytes: map[string]int64{}}
	for _, mt := range man.Methods {
		rep.Methods = append(rep.Methods, inspectMethod{Name: mt.Name, Step: mt.Step, Logits: string(mt.Logits), Ops: len(mt.Ops), Inputs: mt.Inputs})
	}
	eb := int64(md.CacheDType.ElemBytes())
	for i, l := range md.Layers {
		b := int64(l.KVHeads*l.CacheRows*(l.KHeadDim+l.VHeadDim)) * eb
		rep.Layers = append(rep.Layers, inspectLayer{Index: i, Type: string(l.Type), KVHeads: l.KVHeads,
			KHeadDim: l.KHeadDim, VHeadDim: l.VHeadDim, CacheRows: l.CacheRows, CacheBytes: b})
		rep.CacheBytes += b
	}
	_, err := m.Tokenizer()
	rep.Tokenizer = err == nil
	_, err = m.ChatTemplate("")
	rep.ChatTemplate = err == nil
	for _, t := range man.Tensors {
		if !strings.HasPrefix(t.Name, "rope.") {
			rep.Parameters += int64(t.Shape.Elems())
		}
		rep.WeightBytes[string(t.DType)] += t.Size
		rep.Tensors = append(rep.Tensors, inspectTensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Bytes: t.Size})
	}
	for _, a := range man.Assets {
		rep.Assets = append(rep.Assets, a.Name)
	}
	return rep
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func yesNo(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

func printInspect(w io.Writer, r inspectReport, tensors bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "program\t%s\n", r.Program)
	fmt.Fprintf(tw, "contract\t%s v%d\n", r.Contract, r.Version)
	fmt.Fprintf(tw, "fingerprint\t%s\n", r.Fingerprint)
	fmt.Fprintf(tw, "file\t%s bytes\n", groupDigits(r.FileBytes))
	fmt.Fprintf(tw, "source\t%s (checkpoint %s, %s, weights %s)\n", r.Source.Architecture, r.Source.Checkpoint, r.Source.Exporter, r.Source.Weights)
	if r.Source.Model != "" || r.Source.Writer != "" {
		fmt.Fprintf(tw, "model\t%s (written by %s)\n", orUnknown(r.Source.Model), orUnknown(r.Source.Writer))
	} else {
		fmt.Fprintf(tw, "model\tnot recorded (exported before hfstatic recorded it)\n")
	}
	fmt.Fprintf(tw, "parameters\t%s\n", groupDigits(r.Parameters))
	fmt.Fprintf(tw, "tokenizer\t%s\n", yesNo(r.Tokenizer, "embedded", "none (the program takes token ids only)"))
	fmt.Fprintf(tw, "chat template\t%s\n", yesNo(r.ChatTemplate, "embedded", "none (chat runs as plain continuation)"))
	fmt.Fprintf(tw, "context\t%d\n", r.Context)
	fmt.Fprintf(tw, "vocab\t%d\n", r.VocabSize)
	bos := "none"
	if r.Tokens.BOS != nil {
		bos = fmt.Sprint(*r.Tokens.BOS)
	}
	fmt.Fprintf(tw, "tokens\tbos %s, eos %v, pad %d\n", bos, r.Tokens.EOS, r.Tokens.Pad)
	if r.Window > 0 {
		fmt.Fprintf(tw, "sliding window\t%d (%s layout)\n", r.Window, r.Layout)
	}
	for _, mt := range r.Methods {
		fmt.Fprintf(tw, "method %s\tstep %d, logits %s, %d ops\n", mt.Name, mt.Step, mt.Logits, mt.Ops)
	}
	fmt.Fprintf(tw, "caches\t%s, %s bytes per session (all I/O buffers: %s bytes)\n", r.CacheDType, groupDigits(r.CacheBytes), groupDigits(r.SessionBytes))
	for _, d := range []string{"f32", "f16", "bf16", "q8", "q4"} {
		if b, ok := r.WeightBytes[d]; ok {
			fmt.Fprintf(tw, "weights %s\t%s bytes\n", d, groupDigits(b))
		}
	}
	if len(r.Assets) > 0 {
		fmt.Fprintf(tw, "assets\t%v\n", r.Assets)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nlayer  type     kv_heads  k_dim  v_dim  cache_rows  cache_bytes")
	for _, l := range r.Layers {
		fmt.Fprintf(w, "%5d  %-7s  %8d  %5d  %5d  %10d  %11s\n", l.Index, l.Type, l.KVHeads, l.KHeadDim, l.VHeadDim, l.CacheRows, groupDigits(l.CacheBytes))
	}
	if tensors {
		fmt.Fprintln(w, "\ntensor  dtype  shape  bytes")
		for _, t := range r.Tensors {
			fmt.Fprintf(w, "%s  %s  %v  %d\n", t.Name, t.DType, t.Shape, t.Bytes)
		}
	}
}

// extractGraphs writes f's ONNX graphs and their external data files into dir.
func extractGraphs(w io.Writer, f *program.File, dir string) error {
	if _, err := onnx.ReadPayload(f); err != nil {
		return err // before creating dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var graphs []string
	var files int
	var bytes int64
	err := onnx.Extract(f, func(name string, data []byte) error {
		if strings.HasSuffix(name, ".onnx") {
			graphs = append(graphs, name)
		} else {
			files++
		}
		bytes += int64(len(data))
		return os.WriteFile(filepath.Join(dir, name), data, 0o644)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s into %s with %d external data files (%s bytes in all)\n", strings.Join(graphs, ", "), dir, files, groupDigits(bytes))
	return nil
}
