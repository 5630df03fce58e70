package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/generate"
	"github.com/hfstatic/hfstatic/runner"
)

// benchOptions are the bench command's flags.
type benchOptions struct {
	promptTokens int    // tokens appended by the measured prefill
	genTokens    int    // decode steps measured after the prompt
	depth        int    // tokens already in the session before the measured prefill
	batch        int    // sessions that prefill and then decode together (1: one session alone)
	threads      int    // executor threads
	repeat       int    // measured repeats; medians are reported
	asJSON       bool   // print benchReport as JSON
	cpuProfile   string // file for a CPU profile of the measured repeats; "" for none
}

// benchReport is the --json output of bench; its field names are a stable interface.
// Rates are medians over Repeat runs; the *_runs fields hold every run in order.
type benchReport struct {
	Program      string    `json:"program"`
	Weights      string    `json:"weights"`       // the program's weight type (f32, f16, bf16, q8, q4)
	ProgramBytes int64     `json:"program_bytes"` // size of the program file
	Threads      int       `json:"threads"`
	Context      int       `json:"context"`      // C
	PrefillStep  int       `json:"prefill_step"` // P; 0 when the program has no prefill method
	PromptTokens int       `json:"prompt_tokens"`
	GenTokens    int       `json:"gen_tokens"`
	Depth        int       `json:"depth"` // tokens in the cache before the measured prefill
	Batch        int       `json:"batch"` // sessions measured together; rates are totals over all of them
	Repeat       int       `json:"repeat"`
	LoadS        float64   `json:"load_s"`          // opening and loading the program
	FirstTokenS  float64   `json:"first_token_s"`   // load plus the first one-token step (startup)
	Load         string    `json:"load"`            // --load mode (mmap, mmap-plain, copy), or "embedded"
	HugeBytes    int64     `json:"huge_page_bytes"` // bytes of the program mapped in 2 MiB pages (0 where unknown)
	Recached     bool      `json:"recached"`        // the load re-read a file cached in small pages (--load mmap)
	PrefillTokS  float64   `json:"prefill_tok_s"`
	DecodeTokS   float64   `json:"decode_tok_s"`
	PrefillRuns  []float64 `json:"prefill_runs_tok_s"`
	DecodeRuns   []float64 `json:"decode_runs_tok_s"`
}

func newBenchCmd() *cobra.Command {
	var (
		o  benchOptions
		ef exportFlags
	)
	cmd := &cobra.Command{
		Use:   "bench [PROGRAM]",
		Short: "Measure startup, prefill and decode speed of a program",
		Long: `bench loads a program, runs one token (startup), warms up, and then, on a fresh
session for each repeat, times the prefill of a prompt of --prompt-tokens fixed
pseudo-random token ids and --gen-tokens greedy decode steps after it. It prints
the median tokens per second of --repeat runs (like llama-bench -p and -n).
--depth N first fills the session with N tokens, untimed, so that both phases run
against a cache of N tokens (like llama-bench -d).
--batch B runs B sessions joined to one batcher: each prefills the prompt, then all
decode together; the rates are totals over the B sessions (like llama-batched-bench's
S_PP and S_TG).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := runBench(cmd, argOr(args, 0), o, &ef)
			if err != nil {
				return err
			}
			if o.asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printBench(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.promptTokens, "prompt-tokens", 128, "prompt tokens processed by the measured prefill")
	f.IntVar(&o.genTokens, "gen-tokens", 64, "tokens generated (decode steps) after the prompt")
	f.IntVar(&o.depth, "depth", 0, "tokens in the cache before the measured prefill (untimed), like llama-bench -d")
	f.IntVar(&o.batch, "batch", 1, "sessions that prefill, then decode together (rates are their totals)")
	f.IntVar(&o.threads, "threads", defaultThreads(), "worker threads")
	f.IntVar(&o.repeat, "repeat", 3, "measured repeats (medians are reported)")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured repeats to this file")
	ef.register(f)
	return cmd
}

func runBench(cmd *cobra.Command, path string, o benchOptions, ef *exportFlags) (benchReport, error) {
	ctx := cmd.Context()
	switch {
	case o.promptTokens < 1:
		return benchReport{}, usagef("--prompt-tokens %d must be ≥ 1", o.promptTokens)
	case o.genTokens < 1:
		return benchReport{}, usagef("--gen-tokens %d must be ≥ 1", o.genTokens)
	case o.depth < 0:
		return benchReport{}, usagef("--depth %d must be ≥ 0", o.depth)
	case o.repeat < 1:
		return benchReport{}, usagef("--repeat %d must be ≥ 1", o.repeat)
	case o.batch < 1:
		return benchReport{}, usagef("--batch %d must be ≥ 1", o.batch)
	}
	start := time.Now()
	m, err := openProgram(cmd, path, o.threads, ef)
	if err != nil {
		return benchReport{}, err
	}
	defer m.Close()
	loadS := time.Since(start).Seconds()

	md := m.Runner.Metadata()
	shape := m.Runner.Planner()
	rep := benchReport{
		Program: m.name, Weights: md.Source.Weights, ProgramBytes: m.File.Size(),
		Threads: o.threads, Context: shape.Context, PrefillStep: shape.Prefill,
		PromptTokens: o.promptTokens, GenTokens: o.genTokens, Depth: o.depth, Batch: o.batch, Repeat: o.repeat, LoadS: loadS,
	}
	rep.Load = "embedded"
	if m.file != nil {
		rep.Load, rep.HugeBytes, rep.Recached = loadMode, m.file.HugeBytes(), m.file.Recached()
	}
	// Every measured decode step is appended, so prompt + gen positions are needed.
	if need := o.depth + o.promptTokens + o.genTokens; need > shape.Context {
		return rep, usagef("--depth %d, --prompt-tokens %d and --gen-tokens %d need %d positions, but the program's context is %d: lower them or export with a larger --context",
			o.depth, o.promptTokens, o.genTokens, need, shape.Context)
	}
	all := benchPrompt(o.depth+o.promptTokens, md.VocabSize)
	depth, prompt := all[:o.depth], all[o.depth:]

	sess, err := m.Runner.NewSession()
	if err != nil {
		return rep, err
	}
	defer sess.Close()
	if err := sess.Append(ctx, prompt[:1]); err != nil {
		return rep, fmt.Errorf("first token: %w", err)
	}
	rep.FirstTokenS = time.Since(start).Seconds()
	// Warm-up: one full prefill and a few decode steps touch every weight page and buffer.
	if err := sess.Reset(); err != nil {
		return rep, err
	}
	if _, _, err := benchOnce(ctx, sess, depth, prompt, min(4, o.genTokens)); err != nil {
		return rep, fmt.Errorf("warm-up: %w", err)
	}
	sess.Close()
	if o.batch > 1 {
		return rep, benchBatch(ctx, m.Runner, o, depth, prompt, &rep)
	}

	// One fresh session per repeat, made up front: Reset writes every cache page once, so
	// first-touch page faults of new buffers stay out of the timings and the profile.
	sessions := make([]*runner.Session, o.repeat)
	defer func() {
		for _, s := range sessions {
			if s != nil {
				s.Close()
			}
		}
	}()
	for r := range sessions {
		s, err := m.Runner.NewSession()
		if err != nil {
			return rep, err
		}
		sessions[r] = s
		if err := s.Reset(); err != nil {
			return rep, err
		}
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return rep, err
	}
	defer stopProfile()
	for r, s := range sessions {
		runtime.GC() // collect earlier garbage outside the timed region
		pre, dec, err := benchOnce(ctx, s, depth, prompt, o.genTokens)
		if err != nil {
			return rep, fmt.Errorf("repeat %d: %w", r+1, err)
		}
		s.Close()
		rep.PrefillRuns = append(rep.PrefillRuns, float64(o.promptTokens)/pre.Seconds())
		rep.DecodeRuns = append(rep.DecodeRuns, float64(o.genTokens)/dec.Seconds())
	}
	rep.PrefillTokS = median(rep.PrefillRuns)
	rep.DecodeTokS = median(rep.DecodeRuns)
	return rep, nil
}

// startCPUProfile starts a CPU profile written to path ("" for none); the returned func stops it.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// benchOnce appends depth (untimed) and then prompt to an empty session, then runs gen
// greedy decode steps, each appending the argmax of the previous logits. It returns the
// time of each phase. CPU profile samples taken on the calling goroutine carry the label
// phase=depth, phase=prefill or phase=decode (pool workers are not labelled), for pprof
// -tagfocus.
func benchOnce(ctx context.Context, s *runner.Session, depth, prompt []int, gen int) (prefill, decode time.Duration, err error) {
	if len(depth) > 0 {
		pprof.Do(ctx, pprof.Labels("phase", "depth"), func(ctx context.Context) {
			if err = s.Append(ctx, depth); err != nil {
				err = fmt.Errorf("depth of %d tokens: %w", len(depth), err)
			}
		})
		if err != nil {
			return 0, 0, err
		}
	}
	pprof.Do(ctx, pprof.Labels("phase", "prefill"), func(ctx context.Context) {
		t := time.Now()
		if err = s.Append(ctx, prompt); err != nil {
			err = fmt.Errorf("prefill of %d tokens: %w", len(prompt), err)
		}
		prefill = time.Since(t)
	})
	if err != nil {
		return 0, 0, err
	}
	pprof.Do(ctx, pprof.Labels("phase", "decode"), func(ctx context.Context) {
		greedy := generate.Greedy{}
		next := make([]int, 1)
		t := time.Now()
		for i := 0; i < gen; i++ {
			next[0] = greedy.Sample(s.Logits().View(), nil)
			if err = s.Append(ctx, next); err != nil {
				err = fmt.Errorf("decode step %d: %w", i+1, err)
				return
			}
		}
		decode = time.Since(t)
	})
	if err != nil {
		return 0, 0, err
	}
	return prefill, decode, nil
}

// benchPrompt is n token ids drawn from a fixed seed, so every run processes the same prompt.
func benchPrompt(n, vocab int) []int {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]int, n)
	for i := range ids {
		ids[i] = rng.IntN(vocab)
	}
	return ids
}

// median of xs (which it does not modify); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func printBench(w io.Writer, r benchReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "program\t%s (%s bytes, weights %s)\n", r.Program, groupDigits(r.ProgramBytes), r.Weights)
	fmt.Fprintf(tw, "shape\tcontext %d, prefill step %d\n", r.Context, r.PrefillStep)
	fmt.Fprintf(tw, "threads\t%d\n", r.Threads)
	if r.Depth > 0 {
		fmt.Fprintf(tw, "depth\t%d tokens in the cache before the prefill\n", r.Depth)
	}
	if r.Batch > 1 {
		fmt.Fprintf(tw, "batch\t%d sessions together; tok/s are their totals\n", r.Batch)
	}
	fmt.Fprintf(tw, "startup\tload %.3f s, first token at %.3f s\n", r.LoadS, r.FirstTokenS)
	if r.Load != "embedded" && r.ProgramBytes > 0 {
		note := ""
		if r.Recached {
			note = " (re-read: the file was cached in small pages)"
		}
		fmt.Fprintf(tw, "memory	%s, %.0f%% in 2 MiB pages%s\n", r.Load, 100*float64(r.HugeBytes)/float64(r.ProgramBytes), note)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%-8s  %7s  %12s  %21s\n", "test", "tokens", "median tok/s", "runs (tok/s)")
	fmt.Fprintf(w, "%-8s  %7d  %12.2f  %21s\n", "prefill", r.PromptTokens, r.PrefillTokS, runList(r.PrefillRuns))
	fmt.Fprintf(w, "%-8s  %7d  %12.2f  %21s\n", "decode", r.GenTokens, r.DecodeTokS, runList(r.DecodeRuns))
}

func runList(xs []float64) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.1f", x)
	}
	return s
}
