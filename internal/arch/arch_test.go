package arch

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRegistryListsEveryFamilyOnce(t *testing.T) {
	want := []string{"BertForSequenceClassification", "BertModel", "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "GraniteForCausalLM", "LlamaForCausalLM", "MistralForCausalLM",
		"MixtralForCausalLM", "Olmo2ForCausalLM", "Phi3ForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM",
		"RobertaForSequenceClassification", "RobertaModel", "SmolLM3ForCausalLM", "XLMRobertaForSequenceClassification", "XLMRobertaModel"}
	if diff := cmp.Diff(want, Supported()); diff != "" {
		t.Errorf("Supported (-want +got):\n%s", diff)
	}
	n := 0
	for _, f := range families {
		n += len(f)
	}
	if n != len(want) {
		t.Errorf("%d registrations for %d names: a class is registered twice", n, len(want))
	}
}

func TestLookupNamesTheSupportedClasses(t *testing.T) {
	_, err := Lookup("PhiForCausalLM")
	var u *UnsupportedError
	if !errors.As(err, &u) || u.Name != "PhiForCausalLM" || len(u.Supported) != len(Supported()) {
		t.Errorf("Lookup(PhiForCausalLM) = %v, want an *UnsupportedError listing the supported classes", err)
	}
}

func TestLookupTellsEncodersFromDecoders(t *testing.T) {
	var k *KindError
	if _, err := Lookup("BertModel"); !errors.As(err, &k) || !k.Encoder {
		t.Errorf("Lookup(BertModel) = %v, want a *KindError for an encoder", err)
	}
	if _, err := LookupEncoder("Qwen3ForCausalLM"); !errors.As(err, &k) || k.Encoder {
		t.Errorf("LookupEncoder(Qwen3ForCausalLM) = %v, want a *KindError for a decoder", err)
	}
	if _, err := LookupEncoder("XLMRobertaModel"); err != nil || !IsEncoder("XLMRobertaModel") || IsEncoder("LlamaForCausalLM") {
		t.Errorf("XLMRobertaModel is not found as an encoder: %v", err)
	}
}
