package testckpt

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/hfstatic/hfstatic/internal/arch"
	"github.com/hfstatic/hfstatic/internal/arch/decoder"
	"github.com/hfstatic/hfstatic/internal/arch/encoder"
)

// Initialisation, as the fixtures use it: uniform with these half-widths.
var (
	embedScale = math.Sqrt(3)       // unit variance
	normScale  = 0.1 * math.Sqrt(3) // 0.1 standard deviation around the centre
	biasScale  = 0.5
)

// linearScale gives unit output variance for unit-variance inputs: 3/in.
func linearScale(in int) float64 { return math.Sqrt(3 / float64(in)) }

// Synthesize returns the Spec of random weights for a config.json of any architecture in
// the registry (internal/arch): the tensor names and shapes are the ones the family's
// decoder spec reads (decoder.Spec.Weights, in that order), initialised as the fixtures
// are (norms centred at 1, or 0 where the family stores w of (1+w); linear weights
// ±sqrt(3/in); embeddings ±sqrt(3); biases ±0.5) with seeds SeedFor(modelSeed, name).
// dtype is the stored dtype ("F32", "BF16", "F16").
func Synthesize(config []byte, modelSeed uint64, dtype string) (Spec, error) {
	var head struct {
		Architectures []string `json:"architectures"`
	}
	if err := json.Unmarshal(config, &head); err != nil {
		return Spec{}, fmt.Errorf("testckpt: config.json: %w", err)
	}
	if len(head.Architectures) == 0 {
		return Spec{}, fmt.Errorf("testckpt: config has no architectures")
	}
	if arch.IsEncoder(head.Architectures[0]) {
		return synthesizeEncoder(config, head.Architectures[0], modelSeed, dtype)
	}
	a, err := arch.Lookup(head.Architectures[0])
	if err != nil {
		return Spec{}, fmt.Errorf("testckpt: cannot synthesize: %w", err)
	}
	model, _, err := a.Spec(config)
	if err != nil {
		return Spec{}, fmt.Errorf("testckpt: %w", err)
	}
	normCenter := 1 - float64(model.NormOffset)
	s := Spec{Generator: Generator, ModelSeed: modelSeed, DType: dtype}
	for _, w := range model.Weights() {
		var center, scale float64
		switch {
		case w.Role == decoder.Embed:
			scale = embedScale
		case decoder.IsNorm(w.Role):
			center, scale = normCenter, normScale
		case decoder.IsBias(w.Role):
			scale = biasScale
		default: // a matrix [out, in]
			scale = linearScale(w.Shape[1])
		}
		s.Tensors = append(s.Tensors, TensorSpec{Name: w.Name, Shape: slices.Clone([]int(w.Shape)),
			Seed: SeedFor(modelSeed, w.Name), Center: center, Scale: scale})
	}
	if err := s.validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// synthesizeEncoder is Synthesize for an encoder class (BERT, XLM-RoBERTa): the tensors of
// its encoder spec under the names a base model saves (the class's prefix for
// ForSequenceClassification: "bert.", "roberta."), LayerNorm weights centred at 1 and
// their biases like the linear biases, the position table with all its rows.
func synthesizeEncoder(config []byte, class string, modelSeed uint64, dtype string) (Spec, error) {
	a, err := arch.LookupEncoder(class)
	if err != nil {
		return Spec{}, err
	}
	model, err := a.EncoderSpec(config)
	if err != nil {
		return Spec{}, fmt.Errorf("testckpt: %w", err)
	}
	layout := model.Layouts[0]
	if model.Classifier != nil {
		layout = model.Layouts[len(model.Layouts)-1] // the task class's own prefix
	}
	s := Spec{Generator: Generator, ModelSeed: modelSeed, DType: dtype}
	for _, w := range model.Weights() {
		name := w.Name
		if !w.Head {
			name = layout(name)
		}
		shape := slices.Clone([]int(w.Shape))
		shape[0] += w.SkipRows
		var center, scale float64
		switch {
		case w.Kind == encoder.Embedding || w.Role == encoder.TokenType:
			scale = embedScale
		case w.Role == encoder.EmbedNorm || w.Role == encoder.AttnNorm || w.Role == encoder.FFNNorm:
			center, scale = 1, normScale
		case w.Kind == encoder.Vector:
			scale = biasScale
		default:
			scale = linearScale(shape[1])
		}
		s.Tensors = append(s.Tensors, TensorSpec{Name: name, Shape: shape, Seed: SeedFor(modelSeed, name), Center: center, Scale: scale})
	}
	if err := s.validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// SynthesizeLinear returns the Spec of a sentence-transformers Dense module's weights
// (linear.weight [out, in], and linear.bias unless bias is false), initialised as the
// models' linear layers, with seeds SeedFor(modelSeed, dir + "/" + name).
func SynthesizeLinear(dir string, in, out int, bias bool, modelSeed uint64, dtype string) (Spec, error) {
	s := Spec{Generator: Generator, ModelSeed: modelSeed, DType: dtype, Tensors: []TensorSpec{
		{Name: "linear.weight", Shape: []int{out, in}, Seed: SeedFor(modelSeed, dir+"/linear.weight"), Scale: linearScale(in)}}}
	if bias {
		s.Tensors = append(s.Tensors, TensorSpec{Name: "linear.bias", Shape: []int{out}, Seed: SeedFor(modelSeed, dir+"/linear.bias"), Scale: biasScale})
	}
	return s, s.validate()
}
