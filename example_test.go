package hfstatic_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/hfstatic/hfstatic"
	"github.com/hfstatic/hfstatic/sample"
)

// Generate with the embedded model, streaming the text as it comes.
func Example() {
	ctx := context.Background()
	m, err := hfstatic.OpenEmbedded(ctx, hfstatic.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	_, err = m.Generate(ctx, "Once upon a time", hfstatic.GenerateOptions{
		MaxTokens: 20,
		OnText:    func(text string) error { fmt.Print(text); return nil },
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	// Output:
	// , there was a little girl named Lily. She loved to play outsid
}

// Open a program file written by `hfstatic export`: it is mapped, not read.
func ExampleOpen() {
	f, err := os.CreateTemp("", "example-*.hfs")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(f.Name())
	err = hfstatic.Export(context.Background(), os.DirFS("models/stories260K"), f, hfstatic.ExportOptions{Context: 256})
	if err := errors.Join(err, f.Close()); err != nil {
		log.Fatal(err)
	}
	path := f.Name()
	m, err := hfstatic.Open(path, hfstatic.Options{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	res, err := m.Generate(context.Background(), "The cat", hfstatic.GenerateOptions{MaxTokens: 12})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q (%s, mapped %v)\n", res.Text, res.Reason, m.Mapping().Mapped)
	// Output:
	// " and a boy were playing in the p" (max_tokens, mapped true)
}

// Open a Hugging Face folder: it is exported in memory first.
func ExampleOpenFolder() {
	ctx := context.Background()
	m, err := hfstatic.OpenFolder(ctx, "models/stories260K", hfstatic.Options{
		Export: hfstatic.ExportOptions{Context: 128, Weights: "q8"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	res, err := m.Generate(ctx, "Lily wanted", hfstatic.GenerateOptions{MaxTokens: 10, Stop: []string{"."}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q stopped by %s\n", res.Text, res.Reason)
	// Output:
	// " to go on a walk" stopped by stop
}

// Chat keeps a conversation in one session. The embedded model has no chat template, so
// its chat is plain continuation; a program with a template renders each turn with it.
func ExampleModel_NewChat() {
	ctx := context.Background()
	m, err := hfstatic.OpenEmbedded(ctx, hfstatic.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	c, err := m.NewChat(hfstatic.ChatOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, line := range []string{"Tom had a red ball.", "One day, Tom"} {
		res, err := c.Send(ctx, line, hfstatic.GenerateOptions{MaxTokens: 12})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("> %s\n%s\n", line, res.Text)
	}
	fmt.Printf("templated %v, %d of %d tokens used\n", c.Templated(), c.Tokens(), c.Context())
	// Output:
	// > Tom had a red ball.
	//  He liked to play with his toys. He
	// > One day, Tom
	//  went to the park to play. He saw
	// templated false, 38 of 512 tokens used
}

// Chat answers a list of messages in a new session. The embedded model has no chat
// template, so the messages' text is continued.
func ExampleModel_Chat() {
	ctx := context.Background()
	m, err := hfstatic.OpenEmbedded(ctx, hfstatic.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	res, err := m.Chat(ctx, []hfstatic.Message{{Role: "user", Content: "Sam found a shiny stone."}}, hfstatic.GenerateOptions{MaxTokens: 10})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", res.Text)
	// Output: " He wanted to show his friends"
}

// Sampling takes sample.Options; a seed makes a random run reproducible.
func ExampleGenerateOptions_sampling() {
	ctx := context.Background()
	m, err := hfstatic.OpenEmbedded(ctx, hfstatic.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	opts := hfstatic.GenerateOptions{MaxTokens: 12, Sampling: sample.Options{Temperature: 0.8, TopP: 0.95, Seed: 42}}
	a, err := m.Generate(ctx, "The dog", opts)
	if err != nil {
		log.Fatal(err)
	}
	b, err := m.Generate(ctx, "The dog", opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Text == b.Text)
	// Output: true
}

// The layers under the API stay public: here a runner session, forked to continue one
// prefix two ways without running it twice.
func ExampleModel_Engine() {
	ctx := context.Background()
	m, err := hfstatic.OpenEmbedded(ctx, hfstatic.Options{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	tok, err := m.Tokenizer()
	if err != nil {
		log.Fatal(err)
	}
	ids, err := tok.Encode("Once upon a time", true)
	if err != nil {
		log.Fatal(err)
	}
	s, err := m.Engine().Runner.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(ctx, ids); err != nil {
		log.Fatal(err)
	}
	f, err := s.Fork() // the same caches and position
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	a := sample.Argmax(s.Logits().View())
	b := sample.Argmax(f.Logits().View())
	next, _ := tok.Decode([]int{a}, true)
	fmt.Printf("%d tokens; both continue with %q: %v\n", f.Position(), next, a == b)
	// Output: 5 tokens; both continue with ",": true
}
