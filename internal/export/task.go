package export

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hfstatic/hfstatic/internal/arch"
	"github.com/hfstatic/hfstatic/internal/arch/head"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/program"
)

// Task says what the exported program does.
type Task string

// Tasks.
const (
	// TaskGenerate: a causal LM's decode and prefill methods (hf_static v1).
	TaskGenerate Task = "generate"
	// TaskEmbed: one embedding per text (hf_encode v1, output embedding).
	TaskEmbed Task = "embed"
	// TaskRerank: one relevance score per query and document (hf_encode v1, output score).
	TaskRerank Task = "rerank"
)

// DefaultTask is the task a checkpoint is exported for when Options.Task is "": an
// encoder's class says (ForSequenceClassification: rerank, else embed); a decoder with
// sentence-transformers modules is an embedding model (Qwen3-Embedding), one whose model
// card is titled "Qwen3-Reranker…" a reranker (llama.cpp's converter tells it the same way),
// and any other generates.
func DefaultTask(ckpt *hf.Checkpoint) Task {
	class := ""
	if len(ckpt.Config.Architectures) > 0 {
		class = ckpt.Config.Architectures[0]
	}
	switch {
	case arch.IsEncoder(class) && strings.HasSuffix(class, "ForSequenceClassification"):
		return TaskRerank
	case arch.IsEncoder(class):
		return TaskEmbed
	case ckpt.SentenceTransformers != nil:
		return TaskEmbed
	case strings.HasPrefix(ckpt.ReadmeTitle, "Qwen3-Reranker"):
		return TaskRerank
	}
	return TaskGenerate
}

func (t Task) valid() bool { return t == TaskGenerate || t == TaskEmbed || t == TaskRerank }

// sentenceHead turns a folder's sentence-transformers modules into the head of an embedding
// program over rows of width values: Transformer, then Pooling, Dense modules, Normalize,
// in that order. Other module types, and pooling modes hfstatic does not have, are errors
// that name them.
func sentenceHead(st *hf.SentenceTransformers, width int) (*head.Head, error) {
	h := &head.Head{Output: program.OutputEmbedding}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("sentence-transformers modules: %s", fmt.Sprintf(format, args...))
	}
	pooled := false
	for i, m := range st.Modules {
		switch m.Type {
		case hf.ModuleTransformer:
			if i != 0 {
				return nil, bad("the Transformer module is module %d, not the first", i)
			}
		case hf.ModulePooling:
			if pooled || st.Pooling == nil {
				return nil, bad("a second Pooling module (%s)", m.Path)
			}
			mode, err := poolingMode(st.Pooling)
			if err != nil {
				return nil, bad("%s: %v", m.Path, err)
			}
			if d := st.Pooling.WordEmbeddingDimension; d != 0 && d != width {
				return nil, bad("%s pools %d values per token, the model's hidden size is %d", m.Path, d, width)
			}
			h.Pooling, pooled = mode, true
		case hf.ModuleDense:
			if !pooled || h.Normalize {
				return nil, bad("Dense module %s before the pooling or after the normalization", m.Path)
			}
			d := st.Dense[len(h.Linears)]
			act, err := torchActivation(d.Activation)
			if err != nil {
				return nil, bad("Dense module %s: %v", m.Path, err)
			}
			l := head.Linear{Weight: d.Path + "/linear.weight", In: d.InFeatures, Out: d.OutFeature, Activation: act}
			if d.Bias == nil || *d.Bias {
				l.Bias = d.Path + "/linear.bias"
			}
			h.Linears = append(h.Linears, l)
		case hf.ModuleNormalize:
			if !pooled {
				return nil, bad("Normalize module %s before the pooling", m.Path)
			}
			h.Normalize = true
		default:
			return nil, bad("module %s is a %s, which hfstatic does not run (it runs Transformer, Pooling, Dense and Normalize)", m.Path, m.Type)
		}
	}
	if !pooled {
		return nil, bad("no Pooling module: hfstatic returns one vector per text")
	}
	return h, h.Validate(width)
}

// poolingMode reads a Pooling config's one mode.
func poolingMode(c *hf.PoolingConfig) (string, error) {
	if c.IncludePrompt != nil && !*c.IncludePrompt {
		return "", fmt.Errorf("include_prompt false (pooling without the prompt's tokens) is not supported")
	}
	if c.MeanSqrtLenTokens || c.WeightedMeanTokens {
		return "", fmt.Errorf("mean_sqrt_len and weightedmean pooling are not supported (cls, mean, max, lasttoken are)")
	}
	var modes []string
	for _, m := range []struct {
		on   bool
		mode string
	}{{c.CLSToken, program.PoolCLS}, {c.MeanTokens, program.PoolMean}, {c.MaxTokens, program.PoolMax}, {c.LastToken, program.PoolLast}} {
		if m.on {
			modes = append(modes, m.mode)
		}
	}
	if len(modes) != 1 {
		return "", fmt.Errorf("pooling modes %v: exactly one of cls, mean, max and lasttoken must be on (concatenated poolings are not supported)", modes)
	}
	return modes[0], nil
}

// torchActivation maps a PyTorch activation class (sentence-transformers' Dense
// activation_function) to an activation op; nil is Tanh, Dense's default.
func torchActivation(name *string) (string, error) {
	if name == nil {
		return program.ActTanh, nil
	}
	switch (*name)[strings.LastIndex(*name, ".")+1:] {
	case "Identity":
		return "", nil
	case "Tanh":
		return program.ActTanh, nil
	case "ReLU":
		return program.ActReLU, nil
	case "GELU":
		return program.ActGELU, nil
	case "SiLU":
		return program.ActSiLU, nil
	}
	return "", fmt.Errorf("activation %q is not supported (Identity, Tanh, ReLU, GELU, SiLU are)", *name)
}

// crossEncoderRelevance reads how a classifier's score becomes a relevance, as vLLM and
// sentence-transformers' CrossEncoder read it from config.json: sentence_transformers.
// activation_fn (or the older sbert_ce_default_activation_function), else a sigmoid for a
// single label and none for several.
func crossEncoderRelevance(raw json.RawMessage, labels int) (string, error) {
	var c struct {
		ST struct {
			ActivationFn *string `json:"activation_fn"`
		} `json:"sentence_transformers"`
		Old *string `json:"sbert_ce_default_activation_function"`
	}
	json.Unmarshal(raw, &c) // parsed before: a field of another type means it is absent
	name := c.ST.ActivationFn
	if name == nil {
		name = c.Old
	}
	if name == nil {
		if labels == 1 {
			return program.RelevanceSigmoid, nil
		}
		return "", nil
	}
	switch (*name)[strings.LastIndex(*name, ".")+1:] {
	case "Sigmoid":
		return program.RelevanceSigmoid, nil
	case "Identity":
		return "", nil
	}
	return "", fmt.Errorf("config.json: cross-encoder activation %q is not supported (Sigmoid, Identity are)", *name)
}

// matryoshka reads config.json's Matryoshka fields (vLLM's: is_matryoshka,
// matryoshka_dimensions).
func matryoshka(raw json.RawMessage) (bool, []int) {
	var c struct {
		Is   bool  `json:"is_matryoshka"`
		Dims []int `json:"matryoshka_dimensions"`
	}
	json.Unmarshal(raw, &c)
	return c.Is || len(c.Dims) > 0, c.Dims
}
