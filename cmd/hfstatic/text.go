package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hfstatic/hfstatic/hub"
	"github.com/hfstatic/hfstatic/tokenizer"
)

// openTokenizer loads a tokenizer from a folder with tokenizer.json, or from the tokenizer
// embedded in a program (the default model when path is empty).
func openTokenizer(cmd *cobra.Command, path string) (*tokenizer.Tokenizer, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil && hub.LooksLikeRef(path) {
			dir, err := resolveModelDir(cmd, path, false)
			if err != nil {
				return nil, err
			}
			path = dir
		}
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			tj, err := os.ReadFile(filepath.Join(path, "tokenizer.json"))
			if err != nil {
				return nil, err
			}
			cfg, err := os.ReadFile(filepath.Join(path, "tokenizer_config.json"))
			if err != nil && !os.IsNotExist(err) {
				return nil, err
			}
			return tokenizer.Load(tj, cfg)
		}
	}
	m, err := openProgram(cmd, path, 1, nil)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.Tokenizer()
}

func newTokenizeCmd() *cobra.Command {
	var (
		text           string
		special, jsonl bool
	)
	cmd := &cobra.Command{
		Use:   "tokenize [MODEL] [--text T | --jsonl] [--special]",
		Short: "Print token ids of text as a JSON array",
		Long: `tokenize prints the ids of --text as a JSON array. Without --text it reads standard input:
as plain text, all of it, printing one array (one final newline, as echo adds, is dropped); or,
with --jsonl, as one JSON string per line, printing one array per line. Input whose every line is
a JSON string is read as JSON lines too, with a note (scripts written before --jsonl); --jsonl=false
reads it as text. MODEL is a program, a folder with a tokenizer.json, or ORG/NAME[@REVISION].
--special applies the tokenizer's post-processor (e.g. adds BOS).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("text") && jsonl {
				return usagef("--text gives the text itself; --jsonl reads JSON lines from standard input: pass one")
			}
			tok, err := openTokenizer(cmd, argOr(args, 0))
			if err != nil {
				return err
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			encode := func(s string) error {
				ids, err := tok.Encode(s, special)
				if err != nil {
					return err
				}
				if ids == nil {
					ids = []int{}
				}
				b, _ := json.Marshal(ids)
				out.Write(b)
				return out.WriteByte('\n')
			}
			if cmd.Flags().Changed("text") {
				return encode(text)
			}
			if f, ok := cmd.InOrStdin().(*os.File); ok && isTerminal(f) {
				fmt.Fprintln(cmd.ErrOrStderr(), "reading the text from standard input until Ctrl-D (--text TEXT gives it on the command line)")
			}
			in, err := io.ReadAll(cmd.InOrStdin())
			if err != nil {
				return fmt.Errorf("reading standard input: %w", err)
			}
			if !cmd.Flags().Changed("jsonl") && jsonLines(in) {
				fmt.Fprintln(cmd.ErrOrStderr(), "reading standard input as JSON lines, every line being a JSON string (--jsonl says so; --jsonl=false reads it as text)")
				jsonl = true
			}
			if !jsonl {
				s := strings.TrimSuffix(string(in), "\n")
				return encode(strings.TrimSuffix(s, "\r"))
			}
			dec := json.NewDecoder(bytes.NewReader(in))
			for line := 1; ; line++ {
				var s string
				if err := dec.Decode(&s); err == io.EOF {
					return nil
				} else if err != nil {
					return fmt.Errorf("--jsonl: stdin value %d: want a JSON string per line: %w", line, err)
				}
				if err := encode(s); err != nil {
					return err
				}
			}
		},
	}
	cmd.Flags().StringVar(&text, "text", "", "text to tokenize")
	cmd.Flags().BoolVar(&jsonl, "jsonl", false, "read standard input as one JSON string per line and print one array per line")
	cmd.Flags().BoolVar(&special, "special", false, "apply the post-processor (special tokens such as BOS)")
	return cmd
}

// jsonLines reports whether in is one or more lines that each hold one JSON string (blank
// lines aside): the input of tokenize before --jsonl existed.
func jsonLines(in []byte) bool {
	n := 0
	for _, line := range bytes.Split(in, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var s string
		if line[0] != '"' || json.Unmarshal(line, &s) != nil {
			return false
		}
		n++
	}
	return n > 0
}

func newDetokenizeCmd() *cobra.Command {
	var (
		tokens      string
		skipSpecial bool
	)
	cmd := &cobra.Command{
		Use:   "detokenize [MODEL] --tokens IDS",
		Short: "Print the text of comma-separated token ids",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseTokens(tokens)
			if err != nil {
				return err
			}
			tok, err := openTokenizer(cmd, argOr(args, 0))
			if err != nil {
				return err
			}
			s, err := tok.Decode(ids, skipSpecial)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), s)
			return nil
		},
	}
	cmd.Flags().StringVar(&tokens, "tokens", "", "comma-separated token ids")
	cmd.Flags().BoolVar(&skipSpecial, "skip-special", false, "omit special tokens")
	return cmd
}

// vocabOf is the tokenizer's vocabulary size (0 without a tokenizer: no restriction).
func vocabOf(t *tokenizer.Tokenizer) int {
	if t == nil {
		return 0
	}
	return t.VocabSize()
}
