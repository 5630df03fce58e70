package main

import (
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
