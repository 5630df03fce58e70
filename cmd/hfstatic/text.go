package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	m, err := openAny(cmd.Context(), path, 1)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.Tokenizer()
}

func newTokenizeCmd() *cobra.Command {
	var (
		text    string
		special bool
	)
	cmd := &cobra.Command{
		Use:   "tokenize [MODEL] [--text T] [--special]",
		Short: "Print token ids of text as a JSON array",
		Long: `tokenize prints the ids of --text as a JSON array. Without --text it reads one JSON string per
line of standard input and prints one JSON array per line. MODEL is a program or a folder with a
tokenizer.json. --special applies the tokenizer's post-processor (e.g. adds BOS).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			dec := json.NewDecoder(cmd.InOrStdin())
			for line := 1; ; line++ {
				var s string
				if err := dec.Decode(&s); err == io.EOF {
					return nil
				} else if err != nil {
					return fmt.Errorf("stdin value %d: want a JSON string per line: %w", line, err)
				}
				if err := encode(s); err != nil {
					return err
				}
			}
		},
	}
	cmd.Flags().StringVar(&text, "text", "", "text to tokenize")
	cmd.Flags().BoolVar(&special, "special", false, "apply the post-processor (special tokens such as BOS)")
	return cmd
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
