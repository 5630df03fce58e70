package hub

import "testing"

func TestWantedTakesWhatExportReads(t *testing.T) {
	for name, want := range map[string]bool{
		"config.json": true, "model.safetensors": true, "model-00001-of-00002.safetensors": true,
		"tokenizer.json": true, "README.md": true,
		"modules.json": true, "config_sentence_transformers.json": true, "sentence_bert_config.json": true,
		"1_Pooling/config.json": true, "2_Dense/config.json": true, "2_Dense/model.safetensors": true,
		"2_Dense/pytorch_model.bin": false, "onnx/model.onnx": false, "original/config.json": false,
		"1_Pooling/../config.json": false, "_Pooling/config.json": false, "12/config.json": false,
		"pytorch_model.bin": false, "1_Pooling/sub/config.json": false, "2_Dense/../model.safetensors": false,
	} {
		if got := wanted(name); got != want {
			t.Errorf("wanted(%q) = %v, want %v", name, got, want)
		}
	}
}
