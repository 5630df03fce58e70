package sample_test

import (
	"fmt"

	"github.com/hfstatic/hfstatic/sample"
)

func ExampleSampler() {
	s, err := sample.New(sample.Options{Temperature: 0.7, TopK: 40, TopP: 0.9, RepetitionPenalty: 1.1, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	logits := []float32{0.1, 9, 0.3, 8.9} // one row, read only
	history := []int{1}                   // token 1 was already generated
	fmt.Println(s.Sample(logits, history) < len(logits))
	// Output: true
}

func ExampleStopMatcher() {
	m, _ := sample.NewStopMatcher([]string{"<|im_end|>"})
	for _, piece := range []string{"Hello", " world<|im", "_end|> ignored"} {
		emit, stopped := m.Push(piece)
		fmt.Printf("%q %v\n", emit, stopped)
	}
	// Output:
	// "Hello" false
	// " world" false
	// "" true
}
