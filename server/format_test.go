//go:build !fuzzonly

package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/openai/openai-go/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hfstatic/hfstatic/engine"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/internal/testckpt"
	"github.com/hfstatic/hfstatic/program"
	"github.com/hfstatic/hfstatic/runner"
)

// randomModels caches the random-weight fixtures exported with their real tokenizers.
var randomModels sync.Map

// randomModelOptions returns server options for a random-weight fixture ("qwen3", "llama")
// with the real tokenizer and chat template of its family (tokenizer/testdata).
func randomModelOptions(t testing.TB, name, tokName string) Options {
	t.Helper()
	type built struct {
		m   *engine.Model
		err error
	}
	v, _ := randomModels.LoadOrStore(name, &sync.Once{})
	if once, ok := v.(*sync.Once); ok {
		var b built
		once.Do(func() {
			b.m, b.err = buildRandomModel(name, tokName)
			randomModels.Store(name+"/model", b)
		})
	}
	bv, _ := randomModels.Load(name + "/model")
	b := bv.(built)
	if b.err != nil {
		t.Fatal(b.err)
	}
	tok, err := b.m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := b.m.ChatTemplate("")
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions(t)
	o.Runner, o.Tokenizer, o.Template, o.ModelID = b.m.Runner, tok, tmpl, name
	return o
}

func buildRandomModel(name, tokName string) (*engine.Model, error) {
	folder, err := testckpt.Random(name)
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		raw, err := os.ReadFile("../tokenizer/testdata/" + tokName + "." + f + ".gz")
		if err != nil {
			return nil, err
		}
		z, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(z)
		if err != nil {
			return nil, err
		}
		folder[f] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
	ckpt, err := hf.Open(folder)
	if err != nil {
		return nil, err
	}
	defer ckpt.Close()
	var buf bytes.Buffer
	if _, err := export.Export(context.Background(), ckpt, &buf, export.Options{Context: 1024, Prefill: 32, CacheDType: program.F32}); err != nil {
		return nil, err
	}
	data, err := runner.HeapAllocator{}.Alloc(buf.Len())
	if err != nil {
		return nil, err
	}
	copy(data, buf.Bytes())
	return engine.Load(data, engine.Options{Threads: 1})
}

// structuredSchema is nested and bounded (every string, array and number has a limit), so
// that any generation under it ends within max_tokens whatever the model prefers.
const structuredSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 8},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "role": {"enum": ["admin", "user", "guest"]},
    "active": {"type": "boolean"},
    "address": {
      "type": "object",
      "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 6},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"}
      },
      "required": ["city", "zip"],
      "additionalProperties": false
    },
    "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "maxItems": 3},
    "note": {"anyOf": [{"type": "null"}, {"type": "string", "maxLength": 5}]}
  },
  "required": ["name", "age", "role", "active", "address", "tags", "note"],
  "additionalProperties": false,
  "$defs": {"tag": {"type": "string", "maxLength": 4}}
}`

// TestStructuredOutputValidates asks the official client for JSON-schema replies from
// random-weight Qwen3 and Llama 3 models, 50 seeds each: every reply must parse and validate.
func TestStructuredOutputValidates(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(structuredSchema))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	validator, err := comp.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	json.Unmarshal([]byte(structuredSchema), &schema)
	for _, fx := range []struct{ name, tok string }{{"qwen3", "qwen3"}, {"llama", "llama3"}} {
		t.Run(fx.name, func(t *testing.T) {
			o := randomModelOptions(t, fx.name, fx.tok)
			_, base, _ := startServer(t, func(opts *Options) { *opts = o })
			client := newClient(base)
			valid := 0
			for seed := int64(0); seed < 50; seed++ {
				resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
					Model:     openai.ChatModel(fx.name),
					Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Describe a user as JSON.")},
					MaxTokens: openai.Int(400),
					Seed:      openai.Int(seed),
					ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{
						OfJSONSchema: &openai.ResponseFormatJSONSchemaParam{JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{
							Name: "user", Schema: schema, Strict: openai.Bool(true)}},
					},
				})
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				text := resp.Choices[0].Message.Content
				v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
				if err != nil {
					t.Errorf("seed %d: %q (finish %s) is not JSON: %v", seed, text, resp.Choices[0].FinishReason, err)
					continue
				}
				if err := validator.Validate(v); err != nil {
					t.Errorf("seed %d: %q does not validate: %v", seed, text, err)
					continue
				}
				valid++
			}
			t.Logf("%s: %d/50 replies valid", fx.name, valid)
		})
	}
}

func TestResponseFormatJSONObjectAndErrors(t *testing.T) {
	_, base, _ := startServer(t, nil)
	status, _, body := post(t, base+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":300,"seed":1,"response_format":{"type":"json_object"}}`)
	if status != http.StatusOK {
		t.Fatalf("json_object: %d %s", status, body)
	}
	var reply struct {
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
	}
	json.Unmarshal(body, &reply)
	var obj map[string]any
	if c := reply.Choices[0]; c.FinishReason == "stop" && json.Unmarshal([]byte(c.Message.Content), &obj) != nil {
		t.Errorf("json_object reply %q is not an object", c.Message.Content)
	}
	for _, c := range []struct{ body, param, want string }{
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","patternProperties":{}}}}}`,
			"response_format.json_schema.schema", "patternProperties"},
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}}`, "response_format.json_schema", "json_schema"},
		{`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"yaml"}}`, "response_format.type", "yaml"},
		{`{"prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"$ref":"#"}}}}`, "response_format.json_schema.schema", "cannot end"},
	} {
		url := base + "/v1/chat/completions"
		if strings.HasPrefix(c.body, `{"prompt"`) {
			url = base + "/v1/completions"
		}
		status, _, body := post(t, url, c.body)
		var e errorBody
		json.Unmarshal(body, &e)
		if status != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != c.param || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: %d %s; want 400 param %s mentioning %q", c.body, status, body, c.param, c.want)
		}
	}
}

func TestGBNFGrammarField(t *testing.T) {
	_, base, _ := startServer(t, nil)
	status, _, body := post(t, base+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":20,"seed":3,"grammar":"root ::= (\"yes\" | \"no\") \", \" [a-z]{2,6}"}`)
	var cr struct{ Choices []struct{ Text string } }
	json.Unmarshal(body, &cr)
	if status != http.StatusOK || len(cr.Choices) != 1 || !regexp.MustCompile(`^(yes|no), [a-z]{2,6}$`).MatchString(cr.Choices[0].Text) {
		t.Fatalf("%d %s", status, body)
	}
	for _, b := range []string{
		`{"prompt":"x","grammar":"root ::= \"a"}`,
		`{"prompt":"x","grammar":"root ::= \"a\" root"}`,
	} {
		status, _, body := post(t, base+"/v1/completions", b)
		var e errorBody
		json.Unmarshal(body, &e)
		if status != 400 || e.Error.Param == nil || *e.Error.Param != "grammar" {
			t.Errorf("%s: %d %s", b, status, body)
		}
	}
}
