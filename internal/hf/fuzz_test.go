package hf

import (
	"testing"
	"testing/fstest"
)

// FuzzOpenConfigs feeds arbitrary config.json and generation_config.json to
// Open: it must return a Checkpoint or an error, never panic.
func FuzzOpenConfigs(f *testing.F) {
	f.Add([]byte(llamaConfig), []byte(`{"eos_token_id":[1,2],"temperature":0.7}`))
	f.Add([]byte(`{"architectures":["X"],"eos_token_id":null,"pad_token_id":[3]}`), []byte(`{}`))
	f.Add([]byte(`[]`), []byte(`null`))
	weights := safetensorsFile(f, f32Tensor("w", []int{1}, 1))
	f.Fuzz(func(t *testing.T, config, generation []byte) {
		c, err := Open(fstest.MapFS{
			"config.json":            {Data: config},
			"generation_config.json": {Data: generation},
			"model.safetensors":      {Data: weights},
		})
		if err != nil {
			return
		}
		defer c.Close()
		if len(c.Config.Architectures) == 0 {
			t.Errorf("opened a config without architectures")
		}
		for _, id := range c.Generation.EOSIDs {
			if id < 0 {
				t.Errorf("negative EOS id %d", id)
			}
		}
	})
}
