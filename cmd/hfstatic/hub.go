package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/hub"
	"github.com/hfstatic/hfstatic/internal/arch"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/mmap"
	"github.com/hfstatic/hfstatic/program"
)

// hubEnv turns huggingface_hub's environment variables into a cache and a client, as
// huggingface_hub itself reads them: HF_HUB_CACHE, else HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub or ~/.cache/huggingface/hub; HF_TOKEN, else the file at
// HF_TOKEN_PATH or HF_HOME/token; HF_ENDPOINT; HF_HUB_OFFLINE (1, ON, YES, TRUE);
// HF_HUB_DOWNLOAD_TIMEOUT (seconds: connect, response and stall timeouts of a transfer) and
// HF_HUB_ETAG_TIMEOUT (seconds: a whole metadata request).
func hubEnv(stderr io.Writer, quiet bool) *hub.Client {
	home := os.Getenv("HF_HOME")
	if home == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			if h, err := os.UserHomeDir(); err == nil {
				cache = filepath.Join(h, ".cache")
			}
		}
		home = filepath.Join(cache, "huggingface")
	}
	dir := os.Getenv("HF_HUB_CACHE")
	if dir == "" {
		dir = os.Getenv("HUGGINGFACE_HUB_CACHE")
	}
	if dir == "" {
		dir = filepath.Join(home, "hub")
	}
	token := os.Getenv("HF_TOKEN")
	if token == "" {
		path := os.Getenv("HF_TOKEN_PATH")
		if path == "" {
			path = filepath.Join(home, "token")
		}
		if b, err := os.ReadFile(path); err == nil {
			token = strings.TrimSpace(string(b))
		}
	}
	c := &hub.Client{
		Endpoint: os.Getenv("HF_ENDPOINT"),
		Token:    token,
		Cache:    hub.Cache{Dir: dir},
		Offline:  envTrue("HF_HUB_OFFLINE") || envTrue("TRANSFORMERS_OFFLINE"),
	}
	if d, ok := envSeconds(stderr, "HF_HUB_DOWNLOAD_TIMEOUT"); ok {
		c.ConnectTimeout, c.HeaderTimeout, c.ReadTimeout = d, d, d
	}
	if d, ok := envSeconds(stderr, "HF_HUB_ETAG_TIMEOUT"); ok {
		c.MetadataTimeout = d
	}
	if !quiet {
		c.Progress = downloadProgress(stderr)
	}
	return c
}

// envSeconds reads a timeout in seconds; a value that is not a positive number is
// reported and the default kept.
func envSeconds(stderr io.Writer, name string) (time.Duration, bool) {
	v := os.Getenv(name)
	if v == "" {
		return 0, false
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s <= 0 || s > 1e6 {
		fmt.Fprintf(stderr, "hfstatic: ignoring %s=%q: want a number of seconds\n", name, v)
		return 0, false
	}
	return time.Duration(s * float64(time.Second)), true
}

func envTrue(name string) bool {
	switch strings.ToUpper(os.Getenv(name)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

// downloadProgress shows one bar per file on a terminal, and a line per finished file
// (and per tenth of a large one) elsewhere.
func downloadProgress(w io.Writer) func(hub.Progress) {
	bars := map[string]*progressbar.ProgressBar{}
	tenths := map[string]int64{}
	term := false
	if f, ok := w.(*os.File); ok {
		term = isTerminal(f)
	}
	return func(p hub.Progress) {
		if p.Cached {
			return
		}
		if !term {
			if p.Total > 0 {
				if t := 10 * p.Done / p.Total; t != tenths[p.File] || p.Finished {
					tenths[p.File] = t
					fmt.Fprintf(w, "downloading %s: %s of %s\n", p.File, groupDigits(p.Done), groupDigits(p.Total))
				}
			} else if p.Finished {
				fmt.Fprintf(w, "downloaded %s\n", p.File)
			}
			return
		}
		b := bars[p.File]
		if b == nil {
			b = progressbar.NewOptions64(max(p.Total, 1), progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(p.File), progressbar.OptionShowBytes(true),
				progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond))
			bars[p.File] = b
		}
		b.Set64(p.Done)
		if p.Finished {
			b.Finish()
			fmt.Fprintln(w)
		}
	}
}

// resolveModelDir turns a command's MODEL argument into a local Hugging Face folder: an
// existing folder as it is; ORG/NAME[@REV] from the Hugging Face cache, or downloaded.
func resolveModelDir(cmd *cobra.Command, arg string, quiet bool) (string, error) {
	if _, err := os.Stat(arg); err == nil {
		return arg, nil // a folder, or a file whose error the caller words
	}
	ref, err := hub.ParseRef(arg)
	if err != nil {
		return "", fmt.Errorf("%s: no such folder, and not a Hugging Face model name (ORG/NAME[@REVISION])", arg)
	}
	c := hubEnv(cmd.ErrOrStderr(), quiet)
	if dir, err := c.Cache.Snapshot(ref); err == nil {
		return dir, nil
	}
	if !quiet && !c.Offline {
		fmt.Fprintf(cmd.ErrOrStderr(), "pulling %s from %s into %s\n", ref, endpointName(c), c.Cache.Dir)
	}
	return c.Pull(cmd.Context(), ref)
}

func endpointName(c *hub.Client) string {
	if c.Endpoint != "" {
		return c.Endpoint
	}
	return hub.DefaultEndpoint
}

func newPullCmd() *cobra.Command {
	var quiet bool
	cmd := &cobra.Command{
		Use:   "pull ORG/NAME[@REVISION]",
		Short: "Download a model from the Hugging Face Hub into the Hugging Face cache",
		Long: `Pull downloads what export needs of a Hub repository (config, tokenizer and chat template
files, the safetensors weights and their index) into the Hugging Face cache, in huggingface_hub's
layout, so that transformers and other tools share the download. Downloads run in parallel, resume
where an interrupted one stopped, and are verified against the Hub's hashes.

Environment: HF_HUB_CACHE or HF_HOME (the cache), HF_TOKEN (gated and private models),
HF_ENDPOINT (a mirror), HF_HUB_OFFLINE=1 (use only the cache). It prints the snapshot folder.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := hub.ParseRef(args[0])
			if err != nil {
				return usageError{err}
			}
			c := hubEnv(cmd.ErrOrStderr(), quiet)
			dir, err := c.Pull(cmd.Context(), ref)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), dir)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	return cmd
}

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

// runOptions are the export options of run.
type runOptions struct {
	weights string
	context int
	prefill int
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

func newRunCmd() *cobra.Command {
	var (
		o      runOptions
		prompt string
		n      int
		quiet  bool
	)
	cmd := &cobra.Command{
		Use:   "run ORG/NAME[@REVISION] [--weights q8] [--prompt TEXT]",
		Short: "Download, export once and chat with a Hugging Face model (or a local folder)",
		Long: `Run resolves a model (a local folder, the Hugging Face cache, else the Hub), exports it once
into the program cache (HFSTATIC_HOME, default hfstatic/ under the user cache folder; keyed by the
checkpoint's fingerprint and the export options, so the next run starts at once), then starts a chat,
or generates from --prompt.

Defaults: weights q8; the model's context capped at 4096 and halved until one session's caches fit in
a quarter of the available memory; prefill 64. Each choice is printed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch o.weights {
			case "f32", "f16", "bf16", "q8", "q4":
			default:
				return usagef("--weights %q: want f32, f16, bf16, q8 or q4", o.weights)
			}
			if o.context < 0 || o.prefill < 0 {
				return usagef("--context and --prefill must be ≥ 0")
			}
			ref, err := hub.ParseRef(args[0])
			local := false
			if st, serr := os.Stat(args[0]); serr == nil && st.IsDir() {
				ref, err, local = hub.Ref{Repo: "local/" + filepath.Base(filepath.Clean(args[0])), Revision: "main"}, nil, true
			}
			if err != nil {
				return usageError{fmt.Errorf("%s: no such folder, and not a Hugging Face model name (ORG/NAME[@REVISION])", args[0])}
			}
			dir := args[0]
			if !local {
				if dir, err = resolveModelDir(cmd, args[0], quiet); err != nil {
					return err
				}
			}
			if o.context == 0 {
				raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
				if err != nil {
					return fmt.Errorf("%s: %w", ref, err)
				}
				var cache int64
				o.context, cache = chooseContext(raw, memAvailable())
				if !quiet {
					fmt.Fprintf(cmd.ErrOrStderr(), "context %d (K/V caches %.1f MB per session); weights %s; prefill %d\n",
						o.context, float64(cache)/1e6, o.weights, o.prefill)
				}
			}
			prog, err := ensureProgram(cmd, ref, dir, o, quiet)
			if err != nil {
				return err
			}
			var sub *cobra.Command
			var subArgs []string
			if prompt != "" {
				sub = newGenerateCmd()
				subArgs = []string{prog, "--prompt", prompt, "-n", strconv.Itoa(n)}
			} else {
				sub = newChatCmd()
				subArgs = []string{prog, "-n", strconv.Itoa(n)}
			}
			sub.SetContext(cmd.Context())
			sub.SetIn(cmd.InOrStdin())
			sub.SetOut(cmd.OutOrStdout())
			sub.SetErr(cmd.ErrOrStderr())
			sub.SetArgs(subArgs)
			return sub.Execute()
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.weights, "weights", "q8", "weight type of the program: f32, f16, bf16, q8, q4")
	f.IntVar(&o.context, "context", 0, "context capacity (default: chosen for this machine's memory)")
	f.IntVar(&o.prefill, "prefill", 64, "prefill step of the program")
	f.StringVar(&prompt, "prompt", "", "generate from this prompt instead of starting a chat")
	f.IntVarP(&n, "max-tokens", "n", 256, "most new tokens per reply")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	return cmd
}

// listPrograms reads the program cache.
func listPrograms() ([]cachedProgram, error) {
	root, err := programCache()
	if err != nil {
		return nil, err
	}
	metas, _ := filepath.Glob(filepath.Join(root, "programs", "*", "*.json"))
	var out []cachedProgram
	for _, m := range metas {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var p cachedProgram
		if json.Unmarshal(b, &p) != nil {
			continue
		}
		p.Path = strings.TrimSuffix(m, ".json") + ".hfs"
		st, err := os.Stat(p.Path)
		if err != nil {
			continue
		}
		p.Bytes = st.Size()
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the models in the Hugging Face cache and the programs run exported",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			c := hubEnv(cmd.ErrOrStderr(), true)
			repos, err := c.Cache.List()
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "models in %s:\n", c.Cache.Dir)
			if len(repos) == 0 {
				fmt.Fprintln(w, "  (none)")
			}
			for _, r := range repos {
				var refs []string
				for rev, commit := range r.Refs {
					refs = append(refs, rev+"="+commit[:min(12, len(commit))])
				}
				sort.Strings(refs)
				fmt.Fprintf(w, "  %-40s %12s bytes  %s\n", r.Repo, groupDigits(r.Bytes), strings.Join(refs, " "))
			}
			progs, err := listPrograms()
			if err != nil {
				return err
			}
			root, _ := programCache()
			fmt.Fprintf(w, "programs in %s:\n", root)
			if len(progs) == 0 {
				fmt.Fprintln(w, "  (none)")
			}
			for _, p := range progs {
				fmt.Fprintf(w, "  %-40s %12s bytes  weights %s, context %d, prefill %d  %s\n",
					p.Repo, groupDigits(p.Bytes), p.Weights, p.Context, p.Prefill, p.Path)
			}
			return nil
		},
	}
}

func newRmCmd() *cobra.Command {
	var programsOnly bool
	cmd := &cobra.Command{
		Use:   "rm ORG/NAME",
		Short: "Remove a model's programs and its download from the caches",
		Long: `Rm removes the programs run exported from ORG/NAME and, unless --programs-only, the model's
folder in the Hugging Face cache (which other tools, e.g. transformers, may share).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := hub.ParseRef(args[0])
			if err != nil {
				return usageError{err}
			}
			removed := 0
			progs, err := listPrograms()
			if err != nil {
				return err
			}
			for _, p := range progs {
				if p.Repo == ref.Repo {
					os.Remove(p.Path)
					os.Remove(strings.TrimSuffix(p.Path, ".hfs") + ".json")
					fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", p.Path)
					removed++
				}
			}
			if !programsOnly {
				c := hubEnv(cmd.ErrOrStderr(), true)
				err := c.Cache.Remove(ref.Repo)
				switch {
				case err == nil:
					fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", c.Cache.RepoDir(ref.Repo))
					removed++
				case !errors.Is(err, hub.ErrNotCached):
					return err
				}
			}
			if removed == 0 {
				return fmt.Errorf("%s: nothing cached", ref.Repo)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&programsOnly, "programs-only", false, "keep the Hugging Face cache's copy")
	return cmd
}
