package chat_test

import (
	"encoding/json"
	"fmt"

	"github.com/hfstatic/hfstatic/internal/chat"
)

func ExampleFromTokenizerConfig() {
	cfg := []byte(`{
		"bos_token": {"content": "<s>"},
		"eos_token": "</s>",
		"chat_template": "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
	}`)
	tmpl, err := chat.FromTokenizerConfig(cfg, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt, err := tmpl.Render(chat.Input{
		Messages:            []chat.Message{{Role: "user", Content: "Hi!"}},
		AddGenerationPrompt: true,
	})
	fmt.Printf("%q %v\n", prompt, err)
	// Output: "<s><|user|>Hi!</s><|assistant|>" <nil>
}

func ExampleTemplate_Render_tools() {
	tmpl, err := chat.Parse(`{% for t in tools %}{{ t | tojson }}{% endfor %}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	// json.RawMessage keeps the tool's key order, as Hugging Face does.
	tool := json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "parameters": {}}}`)
	out, err := tmpl.Render(chat.Input{Tools: []any{tool}})
	fmt.Println(out, err)
	// Output: {"type": "function", "function": {"name": "get_weather", "parameters": {}}} <nil>
}
