// Command chat holds a short scripted conversation with a model, reusing the session's
// cache from turn to turn. With the embedded model (no chat template) the conversation is
// plain continuation; give it a program with a chat template for a real chat:
//
//	go run ./chat [PROGRAM.hfs]
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
	var m *hfstatic.Model
	var err error
	if len(os.Args) > 1 {
		m, err = hfstatic.Open(os.Args[1], hfstatic.Options{})
	} else {
		m, err = hfstatic.OpenEmbedded(ctx, hfstatic.Options{})
	}
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	c, err := m.NewChat(hfstatic.ChatOptions{System: "You are a storyteller."})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, line := range []string{"Tell me about a cat.", "What did the cat do next?"} {
		fmt.Printf("> %s\n", line)
		res, err := c.Send(ctx, line, hfstatic.GenerateOptions{MaxTokens: 40})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Text)
	}
	fmt.Printf("(%d of %d context tokens used; chat template: %v)\n", c.Tokens(), c.Context(), c.Templated())
}
