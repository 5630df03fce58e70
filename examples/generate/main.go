// Command generate continues a prompt with the model embedded in hfstatic, streaming the
// text: the whole of embedding hfstatic in a Go program. Give it a program file or a
// Hugging Face folder to run that instead:
//
//	go run ./generate [PROGRAM.hfs | HF_FOLDER] [PROMPT]
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/hfstatic/hfstatic"
)

func main() {
	ctx := context.Background()
	m, err := open(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	prompt := "Once upon a time"
	if len(os.Args) > 2 {
		prompt = os.Args[2]
	}
	fmt.Print(prompt)
	_, err = m.Generate(ctx, prompt, hfstatic.GenerateOptions{
		MaxTokens: 60,
		OnText:    func(text string) error { _, err := fmt.Print(text); return err },
	})
	fmt.Println()
	if err != nil {
		log.Fatal(err)
	}
}

// open opens the model named on the command line: a program file, a Hugging Face folder
// (exported in memory) or, without one, the embedded model.
func open(ctx context.Context) (*hfstatic.Model, error) {
	if len(os.Args) < 2 || os.Args[1] == "" {
		return hfstatic.OpenEmbedded(ctx, hfstatic.Options{})
	}
	if st, err := os.Stat(os.Args[1]); err == nil && st.IsDir() {
		return hfstatic.OpenFolder(ctx, os.Args[1], hfstatic.Options{})
	}
	return hfstatic.Open(os.Args[1], hfstatic.Options{})
}
