package hf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Names of sentence-transformers' files.
const (
	ModulesName          = "modules.json"
	SentenceConfigName   = "config_sentence_transformers.json"
	SentenceBertName     = "sentence_bert_config.json"
	ReadmeName           = "README.md"
	moduleConfigName     = "config.json"
	moduleWeightsName    = "model.safetensors"
	moduleOldWeightsName = "pytorch_model.bin"
)

// sentence-transformers module types (modules.json "type").
const (
	ModuleTransformer = "sentence_transformers.models.Transformer"
	ModulePooling     = "sentence_transformers.models.Pooling"
	ModuleDense       = "sentence_transformers.models.Dense"
	ModuleNormalize   = "sentence_transformers.models.Normalize"
)

// SentenceTransformers is a folder's sentence-transformers metadata, as written: the
// modules in order, the Pooling and Dense modules' configs, the prompts and the maximum
// sequence length. Interpreting it (which pooling, which activations) is the exporter's.
type SentenceTransformers struct {
	Modules []SentenceModule
	// Pooling is the Pooling module's config.json (nil without one).
	Pooling *PoolingConfig
	// Dense are the Dense modules' config.json, in module order; their weights are the
	// checkpoint tensors Path + "/linear.weight" and Path + "/linear.bias".
	Dense []DenseConfig
	// Config is config_sentence_transformers.json (zero when absent).
	Config SentenceConfig
	// MaxSeqLength is sentence_bert_config.json's max_seq_length (0 when absent): the
	// longest input the model was trained on; longer ones are truncated there.
	MaxSeqLength int
}

// SentenceModule is one entry of modules.json.
type SentenceModule struct {
	Idx  int    `json:"idx"`
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
}

// PoolingConfig is a Pooling module's config.json.
type PoolingConfig struct {
	WordEmbeddingDimension int   `json:"word_embedding_dimension"`
	CLSToken               bool  `json:"pooling_mode_cls_token"`
	MeanTokens             bool  `json:"pooling_mode_mean_tokens"`
	MaxTokens              bool  `json:"pooling_mode_max_tokens"`
	MeanSqrtLenTokens      bool  `json:"pooling_mode_mean_sqrt_len_tokens"`
	WeightedMeanTokens     bool  `json:"pooling_mode_weightedmean_tokens"`
	LastToken              bool  `json:"pooling_mode_lasttoken"`
	IncludePrompt          *bool `json:"include_prompt"`
}

// DenseConfig is a Dense module's config.json, with the module's folder.
type DenseConfig struct {
	Path       string `json:"-"`
	InFeatures int    `json:"in_features"`
	OutFeature int    `json:"out_features"`
	Bias       *bool  `json:"bias"` // absent: true
	// Activation is a PyTorch class path ("torch.nn.modules.activation.Tanh",
	// "torch.nn.modules.linear.Identity"); absent: Tanh, sentence-transformers' default.
	Activation *string `json:"activation_function"`
}

// SentenceConfig is the part of config_sentence_transformers.json the exporter reads.
type SentenceConfig struct {
	Prompts           map[string]string `json:"prompts"`
	DefaultPromptName *string           `json:"default_prompt_name"`
	SimilarityFnName  *string           `json:"similarity_fn_name"`
}

// openSentenceTransformers reads modules.json and what it names, when the folder has it.
func (c *Checkpoint) openSentenceTransformers(fsys fs.FS) error {
	raw, err := readOptional(fsys, ModulesName)
	if err != nil || raw == nil {
		return err
	}
	st := &SentenceTransformers{}
	if err := json.Unmarshal(raw, &st.Modules); err != nil {
		return &FileError{File: ModulesName, Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	sort.SliceStable(st.Modules, func(i, j int) bool { return st.Modules[i].Idx < st.Modules[j].Idx })
	for _, m := range st.Modules {
		if m.Path != "" && (!fs.ValidPath(m.Path) || strings.Contains(m.Path, "/")) {
			return &FileError{File: ModulesName, Err: fmt.Errorf("module %q has path %q, not a folder of the model", m.Name, m.Path)}
		}
		file := path.Join(m.Path, moduleConfigName)
		switch m.Type {
		case ModulePooling:
			st.Pooling = &PoolingConfig{}
			if err := readJSON(fsys, file, st.Pooling); err != nil {
				return err
			}
		case ModuleDense:
			d := DenseConfig{Path: m.Path}
			if err := readJSON(fsys, file, &d); err != nil {
				return err
			}
			if err := c.openModuleWeights(fsys, m.Path); err != nil {
				return err
			}
			st.Dense = append(st.Dense, d)
		}
	}
	if raw, err := readOptional(fsys, SentenceConfigName); err != nil {
		return err
	} else if raw != nil {
		if err := json.Unmarshal(raw, &st.Config); err != nil {
			return &FileError{File: SentenceConfigName, Err: fmt.Errorf("invalid JSON: %w", err)}
		}
	}
	if raw, err := readOptional(fsys, SentenceBertName); err != nil {
		return err
	} else if raw != nil {
		var sb struct {
			MaxSeqLength int `json:"max_seq_length"`
		}
		if err := json.Unmarshal(raw, &sb); err != nil {
			return &FileError{File: SentenceBertName, Err: fmt.Errorf("invalid JSON: %w", err)}
		}
		st.MaxSeqLength = sb.MaxSeqLength
	}
	c.SentenceTransformers = st
	return nil
}

// openModuleWeights adds a module folder's model.safetensors to the checkpoint, its
// tensors named dir + "/" + name.
func (c *Checkpoint) openModuleWeights(fsys fs.FS, dir string) error {
	file := path.Join(dir, moduleWeightsName)
	if _, err := fs.Stat(fsys, file); errors.Is(err, fs.ErrNotExist) {
		if _, err := fs.Stat(fsys, path.Join(dir, moduleOldWeightsName)); err == nil {
			return &FileError{File: path.Join(dir, moduleOldWeightsName), Err: errors.New("module weights in PyTorch's pickle format: only safetensors are read (convert the module with safetensors' save_file)")}
		}
		return &FileError{File: file, Err: fmt.Errorf("the module's weights are missing: %w", fs.ErrNotExist)}
	}
	sh, err := openShard(fsys, file)
	if err != nil {
		return err
	}
	sh.prefix = dir + "/"
	i := len(c.shards)
	c.shards = append(c.shards, sh)
	for _, t := range sh.file.Tensors() {
		name := sh.prefix + t.Name
		c.where[name] = i
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	return nil
}

func readJSON(fsys fs.FS, name string, v any) error {
	raw, err := fs.ReadFile(fsys, name)
	if err != nil {
		return &FileError{File: name, Err: err}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &FileError{File: name, Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	return nil
}

// readmeTitle returns the first level-1 Markdown heading of README.md (after its YAML front
// matter), reading at most 64 KiB.
func readmeTitle(fsys fs.FS) (string, error) {
	raw, err := readOptional(fsys, ReadmeName)
	if err != nil || raw == nil {
		return "", err
	}
	raw = raw[:min(len(raw), 64<<10)]
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 4096), len(raw)+1)
	front := false
	for n := 0; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if line == "---" && (n == 0 || front) {
			front = !front
			continue
		}
		if !front {
			if t, ok := strings.CutPrefix(line, "# "); ok {
				return strings.TrimSpace(t), nil
			}
		}
	}
	return "", nil
}
