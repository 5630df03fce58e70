// Package hf reads a Hugging Face checkpoint folder through an fs.FS:
// config.json, generation_config.json, model.safetensors or a sharded
// model.safetensors.index.json, the tokenizer files (kept as raw bytes), and
// sentence-transformers' metadata where the folder has it (modules.json, the
// Pooling and Dense modules, prompts; sentence.go).
//
// It owns locating files, parsing the generic config fields (architecture
// class, model type, dtype, token ids) and giving access to tensors by name.
// It does not interpret architecture fields (hidden size, layers, RoPE…):
// architecture packages unmarshal ConfigFile.Raw themselves. It knows nothing
// about programs or execution.
package hf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	"github.com/hfstatic/hfstatic/internal/safetensors"
)

// Names of the files read from a checkpoint folder.
const (
	ConfigName           = "config.json"
	GenerationConfigName = "generation_config.json"
	WeightsName          = "model.safetensors"
	WeightsIndexName     = "model.safetensors.index.json"
	TokenizerName        = "tokenizer.json"
	TokenizerConfigName  = "tokenizer_config.json"
)

// Checkpoint is an opened checkpoint folder. Tensor data is read lazily from
// the shard files, which stay open until Close.
type Checkpoint struct {
	Config     ConfigFile
	Generation Generation

	// Raw bytes of optional files, nil when absent, kept for exporters to embed.
	GenerationConfigJSON []byte
	TokenizerJSON        []byte
	TokenizerConfigJSON  []byte

	// SentenceTransformers is the folder's sentence-transformers metadata (modules.json and
	// the module files it names), nil when it has none. Its Dense modules' weights are
	// tensors of the checkpoint, named "<module folder>/<tensor>" ("2_Dense/linear.weight").
	SentenceTransformers *SentenceTransformers
	// ReadmeTitle is the first level-1 heading of README.md (the model card's title, e.g.
	// "Qwen3-Reranker-0.6B"), "" when there is none.
	ReadmeTitle string

	shards []shard
	where  map[string]int // tensor name → index in shards
	names  []string       // sorted
}

type shard struct {
	name   string
	file   *safetensors.File
	closer io.Closer // nil when the data was read into memory
	// prefix is put before the file's tensor names in the checkpoint's table (a
	// sentence-transformers module's folder: "2_Dense/"); "" for the model's own files.
	prefix string
}

// tensor looks up a checkpoint tensor name in the shard's file.
func (sh shard) tensor(name string) (safetensors.Tensor, bool) {
	return sh.file.Lookup(strings.TrimPrefix(name, sh.prefix))
}

// Open reads the checkpoint folder fsys. Files that implement io.ReaderAt
// (as mmap.DirFS's do) are read in place, with zero-copy Raw when they also
// expose Bytes(); other files are read into memory.
//
// Weights come from model.safetensors if present, else from the shards named
// by model.safetensors.index.json; the index's weight_map is authoritative
// (tensors a shard holds but the index does not list are ignored).
func Open(fsys fs.FS) (*Checkpoint, error) {
	c := &Checkpoint{where: make(map[string]int)}
	cfgData, err := fs.ReadFile(fsys, ConfigName)
	if err != nil {
		return nil, &FileError{File: ConfigName, Err: fmt.Errorf("required file unreadable: %w", err)}
	}
	cfg, tokenFields, err := parseConfig(cfgData)
	if err != nil {
		return nil, &FileError{File: ConfigName, Err: err}
	}
	if err := checkBounds(cfgData); err != nil {
		return nil, &FileError{File: ConfigName, Err: err}
	}
	c.Config = cfg
	if c.GenerationConfigJSON, err = readOptional(fsys, GenerationConfigName); err != nil {
		return nil, err
	}
	gen, err := parseGeneration(c.GenerationConfigJSON, tokenFields)
	if err != nil {
		name := GenerationConfigName
		if c.GenerationConfigJSON == nil {
			name = ConfigName
		}
		return nil, &FileError{File: name, Err: err}
	}
	c.Generation = gen
	if c.ReadmeTitle, err = readmeTitle(fsys); err != nil {
		return nil, err
	}
	if c.TokenizerJSON, err = readOptional(fsys, TokenizerName); err != nil {
		return nil, err
	}
	if c.TokenizerConfigJSON, err = readOptional(fsys, TokenizerConfigName); err != nil {
		return nil, err
	}
	if err := c.openWeights(fsys); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.openSentenceTransformers(fsys); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func readOptional(fsys fs.FS, name string) ([]byte, error) {
	b, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &FileError{File: name, Err: err}
	}
	return b, nil
}

func (c *Checkpoint) openWeights(fsys fs.FS) error {
	// Like transformers, a single model.safetensors is preferred over an index.
	if _, err := fs.Stat(fsys, WeightsName); err == nil {
		sh, err := openShard(fsys, WeightsName)
		if err != nil {
			return err
		}
		c.shards = append(c.shards, sh)
		for _, t := range sh.file.Tensors() {
			c.where[t.Name] = 0
			c.names = append(c.names, t.Name)
		}
		return nil
	}
	indexData, err := fs.ReadFile(fsys, WeightsIndexName)
	if errors.Is(err, fs.ErrNotExist) {
		return &FileError{File: WeightsName, Err: ErrNoWeights}
	}
	if err != nil {
		return &FileError{File: WeightsIndexName, Err: err}
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(indexData, &index); err != nil {
		return &FileError{File: WeightsIndexName, Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	if len(index.WeightMap) == 0 {
		return &FileError{File: WeightsIndexName, Err: errors.New(`"weight_map" is missing or empty`)}
	}
	shardOf := make(map[string]int) // shard file name → index in c.shards
	var files []string
	for _, file := range index.WeightMap {
		if _, ok := shardOf[file]; !ok {
			shardOf[file] = -1
			files = append(files, file)
		}
	}
	sort.Strings(files)
	for _, file := range files {
		if !fs.ValidPath(file) || !strings.HasSuffix(file, ".safetensors") {
			return &FileError{File: WeightsIndexName, Err: fmt.Errorf("weight_map names shard %q, which is not a .safetensors file inside the folder", file)}
		}
		sh, err := openShard(fsys, file)
		if err != nil {
			return err
		}
		shardOf[file] = len(c.shards)
		c.shards = append(c.shards, sh)
	}
	for name, file := range index.WeightMap {
		i := shardOf[file]
		if _, ok := c.shards[i].file.Lookup(name); !ok {
			return &TensorError{Tensor: name, File: file, Err: ErrNotInShard}
		}
		c.where[name] = i
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	return nil
}

func openShard(fsys fs.FS, name string) (shard, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return shard{}, &FileError{File: name, Err: err}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return shard{}, &FileError{File: name, Err: err}
	}
	if ra, ok := f.(io.ReaderAt); ok {
		sf, err := safetensors.Read(ra, st.Size())
		if err != nil {
			f.Close()
			return shard{}, &FileError{File: name, Err: err}
		}
		return shard{name: name, file: sf, closer: f}, nil
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return shard{}, &FileError{File: name, Err: err}
	}
	sf, err := safetensors.FromBytes(data)
	if err != nil {
		return shard{}, &FileError{File: name, Err: err}
	}
	return shard{name: name, file: sf}, nil
}

// Close closes the shard files. Slices returned by Raw must not be used afterwards.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, sh := range c.shards {
		if sh.closer != nil {
			if err := sh.closer.Close(); err != nil {
				errs = append(errs, &FileError{File: sh.name, Err: err})
			}
		}
	}
	c.shards = nil
	c.where = nil
	c.names = nil
	return errors.Join(errs...)
}

// Names returns all tensor names, sorted. The slice must not be modified.
func (c *Checkpoint) Names() []string { return c.names }

// Tensor returns the description of the named tensor.
func (c *Checkpoint) Tensor(name string) (safetensors.Tensor, bool) {
	i, ok := c.where[name]
	if !ok {
		return safetensors.Tensor{}, false
	}
	return c.shards[i].tensor(name)
}

// File returns the name of the file holding the named tensor.
func (c *Checkpoint) File(name string) (string, bool) {
	i, ok := c.where[name]
	if !ok {
		return "", false
	}
	return c.shards[i].name, true
}

func (c *Checkpoint) lookup(name string) (shard, safetensors.Tensor, error) {
	i, ok := c.where[name]
	if !ok {
		return shard{}, safetensors.Tensor{}, &TensorError{Tensor: name, Err: ErrTensorNotFound}
	}
	sh := c.shards[i]
	t, _ := sh.tensor(name)
	return sh, t, nil
}

// Raw returns the named tensor's little-endian bytes (see Tensor for dtype
// and shape). The result may alias mapped memory: do not modify it.
func (c *Checkpoint) Raw(name string) ([]byte, error) {
	sh, t, err := c.lookup(name)
	if err != nil {
		return nil, err
	}
	b, err := sh.file.Raw(t)
	if err != nil {
		return nil, &TensorError{Tensor: name, File: sh.name, Err: err}
	}
	return b, nil
}

// Float32 returns the named F32/F16/BF16 tensor converted to float32 in a
// new slice, with its shape.
func (c *Checkpoint) Float32(name string) ([]float32, []int, error) {
	sh, t, err := c.lookup(name)
	if err != nil {
		return nil, nil, err
	}
	v, err := sh.file.Float32(t)
	if err != nil {
		return nil, nil, &TensorError{Tensor: name, File: sh.name, Err: err}
	}
	return v, append([]int(nil), t.Shape...), nil
}

// Float32Into converts the named tensor into dst, which must hold exactly its
// number of elements.
func (c *Checkpoint) Float32Into(dst []float32, name string) error {
	sh, t, err := c.lookup(name)
	if err != nil {
		return err
	}
	if err := sh.file.Float32Into(dst, t); err != nil {
		return &TensorError{Tensor: name, File: sh.name, Err: err}
	}
	return nil
}
