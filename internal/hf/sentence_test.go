package hf

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// sentenceFS is a BERT-style sentence-transformers folder: Transformer, Pooling, Dense,
// Normalize, with prompts, a maximum length and a model card.
func sentenceFS(t *testing.T) fstest.MapFS {
	fsys := singleFileFS(t)
	fsys["modules.json"] = &fstest.MapFile{Data: []byte(`[
		{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
		{"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
		{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
		{"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"}]`)}
	fsys["1_Pooling/config.json"] = &fstest.MapFile{Data: []byte(`{"word_embedding_dimension": 2, "pooling_mode_cls_token": true, "include_prompt": true}`)}
	fsys["2_Dense/config.json"] = &fstest.MapFile{Data: []byte(`{"in_features": 2, "out_features": 1, "bias": true, "activation_function": "torch.nn.modules.activation.Tanh"}`)}
	fsys["2_Dense/model.safetensors"] = &fstest.MapFile{Data: safetensorsFile(t, f32Tensor("linear.weight", []int{1, 2}, 5, 6), f32Tensor("linear.bias", []int{1}, 7))}
	fsys["config_sentence_transformers.json"] = &fstest.MapFile{Data: []byte(`{"prompts": {"query": "Instruct: search\nQuery:", "document": ""}, "default_prompt_name": null, "similarity_fn_name": "cosine"}`)}
	fsys["sentence_bert_config.json"] = &fstest.MapFile{Data: []byte(`{"max_seq_length": 256, "do_lower_case": false}`)}
	fsys["README.md"] = &fstest.MapFile{Data: []byte("---\nlicense: apache-2.0\n# not a title: front matter\n---\n\n# Qwen3-Reranker-0.6B\n\n## Highlights\n")}
	return fsys
}

func TestOpenReadsSentenceTransformersModules(t *testing.T) {
	c, err := Open(sentenceFS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st := c.SentenceTransformers
	if st == nil {
		t.Fatal("no sentence-transformers metadata")
	}
	var types []string
	for _, m := range st.Modules {
		types = append(types, m.Type[strings.LastIndex(m.Type, ".")+1:])
	}
	if diff := cmp.Diff([]string{"Transformer", "Pooling", "Dense", "Normalize"}, types); diff != "" {
		t.Errorf("modules in idx order (-want +got):\n%s", diff)
	}
	if st.Pooling == nil || !st.Pooling.CLSToken || st.Pooling.MeanTokens {
		t.Errorf("pooling %+v", st.Pooling)
	}
	if len(st.Dense) != 1 || st.Dense[0].Path != "2_Dense" || st.Dense[0].OutFeature != 1 || *st.Dense[0].Activation != "torch.nn.modules.activation.Tanh" {
		t.Errorf("dense %+v", st.Dense)
	}
	w, _, err := c.Float32("2_Dense/linear.weight")
	if err != nil || !cmp.Equal(w, []float32{5, 6}) {
		t.Errorf("2_Dense/linear.weight = %v, %v", w, err)
	}
	if _, ok := c.Tensor("2_Dense/linear.bias"); !ok {
		t.Error("2_Dense/linear.bias is not a tensor of the checkpoint")
	}
	if _, ok := c.Tensor("linear.weight"); ok {
		t.Error("a module's tensor is reachable without its folder")
	}
	if st.Config.Prompts["query"] != "Instruct: search\nQuery:" || st.Config.DefaultPromptName != nil || st.MaxSeqLength != 256 {
		t.Errorf("config %+v, max_seq_length %d", st.Config, st.MaxSeqLength)
	}
	if c.ReadmeTitle != "Qwen3-Reranker-0.6B" {
		t.Errorf("README title %q", c.ReadmeTitle)
	}
}

func TestOpenRejectsBrokenSentenceTransformersModules(t *testing.T) {
	for name, change := range map[string]func(fstest.MapFS){
		"dense weights missing": func(f fstest.MapFS) { delete(f, "2_Dense/model.safetensors") },
		"dense weights pickled": func(f fstest.MapFS) {
			delete(f, "2_Dense/model.safetensors")
			f["2_Dense/pytorch_model.bin"] = &fstest.MapFile{}
		},
		"pooling config missing": func(f fstest.MapFS) { delete(f, "1_Pooling/config.json") },
		"module outside the folder": func(f fstest.MapFS) {
			f["modules.json"] = &fstest.MapFile{Data: []byte(`[{"idx":0,"path":"../x","type":"sentence_transformers.models.Pooling"}]`)}
		},
		"modules.json is not a list": func(f fstest.MapFS) { f["modules.json"] = &fstest.MapFile{Data: []byte(`{}`)} },
	} {
		t.Run(name, func(t *testing.T) {
			fsys := sentenceFS(t)
			change(fsys)
			_, err := Open(fsys)
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v, want a *FileError", err)
			}
			if name == "dense weights missing" && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %v does not wrap fs.ErrNotExist", err)
			}
		})
	}
}

func TestFolderWithoutModulesHasNoSentenceMetadata(t *testing.T) {
	c, err := Open(singleFileFS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.SentenceTransformers != nil || c.ReadmeTitle != "" {
		t.Errorf("metadata %+v, title %q from a folder without modules.json and README.md", c.SentenceTransformers, c.ReadmeTitle)
	}
}
