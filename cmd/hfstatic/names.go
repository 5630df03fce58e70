package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/hub"
	"github.com/hfstatic/hfstatic/internal/arch"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/program"
)

// programCache is where run keeps exported programs: HFSTATIC_HOME, else hfstatic/ under
// the user's cache folder.
func programCache() (string, error) {
	if d := os.Getenv("HFSTATIC_HOME"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for programs (set HFSTATIC_HOME): %w", err)
	}
	return filepath.Join(d, "hfstatic"), nil
}

// cachedProgram describes a program in the program cache (the .json beside the .hfs).
type cachedProgram struct {
	Repo        string `json:"repo"`
	Revision    string `json:"revision"`
	Commit      string `json:"commit"`
	Fingerprint string `json:"checkpoint_fingerprint"`
	Weights     string `json:"weights"`
	Context     int    `json:"context"`
	Prefill     int    `json:"prefill"`
	Created     string `json:"created"`
	Path        string `json:"-"`
	Bytes       int64  `json:"-"`
}

// runOptions are the export options of a model name's program in the program cache.
type runOptions struct {
	weights string
	context int
	prefill int
}

// defaultNameWeights is the weight type of a model name's program unless --weights says.
const defaultNameWeights = "q8"

// exportFlags are the export options of a command that takes a program and is given a
// model instead: ORG/NAME[@REVISION] (exported once into the program cache, as run does),
// a Hugging Face folder or the embedded model (both exported in memory).
type exportFlags struct {
	weights          string
	context, prefill int
	quiet            bool // no progress output while pulling and exporting
}

func (e *exportFlags) register(f *pflag.FlagSet) {
	f.StringVar(&e.weights, "weights", "", "for a model name or folder: the program's weight type, f32, f16, bf16, q8 or q4 (default: q8 for a model name, the checkpoint's own for a folder)")
	f.IntVar(&e.context, "context", 0, "for a model name or folder: the program's context (default: the model's capped at 4096, for a name also fitted to this machine's memory)")
	f.IntVar(&e.prefill, "prefill", hfstatic.DefaultPrefill, "for a model name or folder: the program's prefill step")
}

// given lists the export flags set on the command line.
func (e *exportFlags) given(f *pflag.FlagSet) []string {
	var out []string
	for _, name := range []string{"weights", "context", "prefill"} {
		if fl := f.Lookup(name); fl != nil && fl.Changed {
			out = append(out, "--"+name)
		}
	}
	return out
}

// inMemoryPrefill is hfstatic.ExportOptions.Prefill: --prefill when given, else 0 (the
// default step, shortened to a shorter context).
func (e *exportFlags) inMemoryPrefill(f *pflag.FlagSet) int {
	if f.Changed("prefill") {
		return e.prefill
	}
	return 0
}

func (e *exportFlags) check() error {
	switch e.weights {
	case "", "f32", "f16", "bf16", "q8", "q4":
	default:
		return usagef("--weights %q: want f32, f16, bf16, q8 or q4", e.weights)
	}
	if e.context < 0 || e.prefill < 0 {
		return usagef("--context and --prefill must be ≥ 0")
	}
	return nil
}

// isModelName reports whether a PROGRAM argument names a model on the Hub rather than a
// path: it has the form ORG/NAME[@REVISION], nothing exists at that path, and it does not
// end in .hfs (a mistyped program path is reported as a missing file, not looked up).
func isModelName(arg string) bool {
	if _, err := os.Stat(arg); err == nil || strings.HasSuffix(arg, ".hfs") {
		return false
	}
	return hub.LooksLikeRef(arg)
}

// nameProgram returns the program of a model name in the program cache: the model comes
// from the Hugging Face cache (or is downloaded into it) and is exported once with e's
// options (run's defaults: weights q8, a context fitted to this machine's memory, prefill
// 64); later calls with the same options open that program at once.
func nameProgram(cmd *cobra.Command, arg string, e exportFlags) (string, error) {
	if err := e.check(); err != nil {
		return "", err
	}
	ref, err := hub.ParseRef(arg)
	if err != nil {
		return "", usageError{err}
	}
	dir, err := resolveModelDir(cmd, arg, e.quiet)
	if err != nil {
		return "", err
	}
	return cachedExport(cmd, ref, dir, e)
}

// cachedExport returns the program of the model folder dir, known as ref, in the program
// cache, exporting it first with e's options when the cache does not hold it.
func cachedExport(cmd *cobra.Command, ref hub.Ref, dir string, e exportFlags) (string, error) {
	if err := e.check(); err != nil {
		return "", err
	}
	o := runOptions{weights: cmp.Or(e.weights, defaultNameWeights), context: e.context, prefill: e.prefill}
	if o.context == 0 {
		raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
		if err != nil {
			return "", fmt.Errorf("%s: %w", ref, err)
		}
		var cache int64
		o.context, cache = chooseContext(raw, memAvailable())
		if !e.quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), "context %d (K/V caches %.1f MB per session); weights %s; prefill %d\n",
				o.context, float64(cache)/1e6, o.weights, o.prefill)
		}
	}
	return ensureProgram(cmd, ref, dir, o, e.quiet)
}

// chooseContext picks the model's trained context capped at 4096, halved until one
// session's float16 K/V caches fit in a quarter of the available memory.
func chooseContext(cfgRaw []byte, avail int64) (ctx int, cacheBytes int64) {
	type dims struct {
		MaxPos  int `json:"max_position_embeddings"`
		Layers  int `json:"num_hidden_layers"`
		Heads   int `json:"num_attention_heads"`
		KVHeads int `json:"num_key_value_heads"`
		HeadDim int `json:"head_dim"`
		Hidden  int `json:"hidden_size"`
	}
	var cfg struct {
		dims
		TextConfig *dims `json:"text_config"` // multimodal folders nest the text model's config
	}
	json.Unmarshal(cfgRaw, &cfg)
	c := cfg.dims
	if cfg.TextConfig != nil {
		c = *cfg.TextConfig
	}
	// A supported architecture's spec has the sizes with the family's defaults filled in
	// (gemma-3-4b's text_config leaves out its heads and head_dim).
	var head struct {
		Architectures []string `json:"architectures"`
	}
	if json.Unmarshal(cfgRaw, &head) == nil && len(head.Architectures) > 0 {
		if a, err := arch.Lookup(head.Architectures[0]); err == nil {
			if s, maxPos, err := a.Spec(cfgRaw); err == nil {
				c = dims{MaxPos: maxPos, Layers: s.Layers, Heads: s.Heads, KVHeads: s.KVHeads, HeadDim: s.HeadDim, Hidden: s.Hidden}
			}
		}
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	ctx = 4096
	if c.MaxPos > 0 && c.MaxPos < ctx {
		ctx = c.MaxPos
	}
	perToken := int64(c.Layers) * int64(c.KVHeads) * int64(c.HeadDim) * 2 * 2 // K and V, float16
	for avail > 0 && ctx > 256 && perToken*int64(ctx) > avail/4 {
		ctx /= 2
	}
	return ctx, perToken * int64(ctx)
}

// memAvailable reads MemAvailable from /proc/meminfo (0 when unknown).
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// ensureProgram returns the cached program for a model folder and options, exporting it
// first if the cache does not hold it. The key covers the checkpoint's fingerprint, the
// snapshot's commit, the options and the program format, so a second run reuses it.
func ensureProgram(cmd *cobra.Command, ref hub.Ref, dir string, o runOptions, quiet bool) (string, error) {
	ckpt, err := hf.Open(mmap.DirFS(dir))
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, err)
	}
	fp := ckpt.Fingerprint()
	ckpt.Close()
	commit := filepath.Base(dir)
	key := sha256.Sum256([]byte(fmt.Sprintf("format %d\nfingerprint %s\ncommit %s\nweights %s\ncontext %d\nprefill %d\n",
		program.FormatVersion, fp, commit, o.weights, o.context, o.prefill)))
	root, err := programCache()
	if err != nil {
		return "", err
	}
	base := filepath.Join(root, "programs", strings.ReplaceAll(ref.Repo, "/", "--"), hex.EncodeToString(key[:8]))
	if st, err := os.Stat(base + ".hfs"); err == nil && st.Mode().IsRegular() {
		return base + ".hfs", nil
	}
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", err
	}
	if !quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "exporting %s once into %s.hfs (weights %s, context %d, prefill %d)\n", ref, base, o.weights, o.context, o.prefill)
	}
	exp := newExportCmd()
	exp.SetContext(cmd.Context())
	exp.SetOut(io.Discard)
	exp.SetErr(cmd.ErrOrStderr())
	args := []string{dir, "-o", base + ".hfs", "--weights", o.weights, "--context", strconv.Itoa(o.context), "--prefill", strconv.Itoa(o.prefill)}
	if quiet {
		args = append(args, "--quiet")
	}
	exp.SetArgs(args)
	if err := exp.Execute(); err != nil {
		return "", err
	}
	meta, _ := json.MarshalIndent(cachedProgram{Repo: ref.Repo, Revision: ref.Revision, Commit: commit, Fingerprint: fp,
		Weights: o.weights, Context: o.context, Prefill: o.prefill, Created: time.Now().UTC().Format(time.RFC3339)}, "", "  ")
	if err := os.WriteFile(base+".json", append(meta, '\n'), 0o644); err != nil {
		return "", err
	}
	return base + ".hfs", nil
}
