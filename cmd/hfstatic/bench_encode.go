package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/hfstatic/hfstatic/runner"
)

// benchEncoder measures an embedding or reranking program: each run encodes o.sentences
// sequences of o.promptTokens pseudo-random ids in one Encode call (the program's batches).
func benchEncoder(ctx context.Context, m *loaded, o benchOptions, loadS float64) (benchReport, error) {
	md := m.Encoder.Metadata()
	rep := benchReport{Program: m.name, Weights: md.Source.Weights, ProgramBytes: m.File.Size(), Threads: o.threads,
		Context: md.MaxContext, Batch: md.Encoder.Batch, PromptTokens: o.promptTokens, Repeat: o.repeat, LoadS: loadS,
		Sentences: o.sentences, Load: "embedded"}
	if m.file != nil {
		rep.Load, rep.HugeBytes, rep.Recached = loadMode, m.file.HugeBytes(), m.file.Recached()
	}
	switch {
	case o.sentences < 1:
		return rep, usagef("--sentences %d must be ≥ 1", o.sentences)
	case o.promptTokens > md.MaxContext:
		return rep, usagef("--prompt-tokens %d is more than the program takes per sequence (%d)", o.promptTokens, md.MaxContext)
	}
	ids := benchPrompt(o.sentences*o.promptTokens, md.VocabSize)
	seqs := make([]runner.Sequence, o.sentences)
	for i := range seqs {
		seqs[i] = runner.Sequence{IDs: ids[i*o.promptTokens : (i+1)*o.promptTokens]}
	}
	start := time.Now()
	if _, err := m.Encoder.Encode(ctx, seqs[:1]); err != nil {
		return rep, fmt.Errorf("first sentence: %w", err)
	}
	rep.FirstTokenS = loadS + time.Since(start).Seconds()
	if _, err := m.Encoder.Encode(ctx, seqs); err != nil { // warm-up: every weight page and scratch row
		return rep, fmt.Errorf("warm-up: %w", err)
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return rep, err
	}
	defer stopProfile()
	for r := range o.repeat {
		runtime.GC()
		t := time.Now()
		if _, err := m.Encoder.Encode(ctx, seqs); err != nil {
			return rep, fmt.Errorf("repeat %d: %w", r+1, err)
		}
		rep.SentencesRuns = append(rep.SentencesRuns, float64(o.sentences)/time.Since(t).Seconds())
	}
	rep.SentencesS = median(rep.SentencesRuns)
	return rep, nil
}

func printEncodeBench(w io.Writer, r benchReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "program\t%s (%s bytes, weights %s)\n", r.Program, groupDigits(r.ProgramBytes), r.Weights)
	fmt.Fprintf(tw, "shape\t%d sequences of up to %d tokens per call\n", r.Batch, r.Context)
	fmt.Fprintf(tw, "threads\t%d\n", r.Threads)
	fmt.Fprintf(tw, "startup\tload %.3f s, first sentence at %.3f s\n", r.LoadS, r.FirstTokenS)
	tw.Flush()
	fmt.Fprintf(w, "\n%-9s  %6s  %17s  %12s  %s\n", "test", "tokens", "median sentences/s", "tok/s", "runs (sentences/s)")
	fmt.Fprintf(w, "%-9s  %6d  %17.2f  %12.1f  %s\n", fmt.Sprintf("%d×%d", r.Sentences, r.PromptTokens), r.PromptTokens,
		r.SentencesS, r.SentencesS*float64(r.PromptTokens), runList(r.SentencesRuns))
}
