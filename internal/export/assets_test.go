package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hfstatic/hfstatic/internal/chat"
	"github.com/hfstatic/hfstatic/internal/export"
	"github.com/hfstatic/hfstatic/internal/hf"
	"github.com/hfstatic/hfstatic/program"
)

// TestAssetsAreValidatedBeforeWriting: an asset that would fail later in
// serve is refused at export with an *AssetError naming it, before any
// byte is written.
func TestAssetsAreValidatedBeforeWriting(t *testing.T) {
	withTemplate := func(tmpl string) []byte {
		b, _ := json.Marshal(map[string]any{"chat_template": tmpl, "bos_token": "<s>", "eos_token": "</s>"})
		return b
	}
	cases := []struct {
		name, file string
		data       []byte
		asset      string
		is         func(error) bool
	}{
		{"tokenizer_config.json that is a hostname", hf.TokenizerConfigName, []byte("buildhost\n"), program.AssetTokenizerConfig, nil},
		{"tokenizer_config.json that is a list", hf.TokenizerConfigName, []byte("[1, 2]"), program.AssetTokenizerConfig, nil},
		{"tokenizer.json that is not a tokenizer", hf.TokenizerName, []byte(`{"model": 3}`), program.AssetTokenizer, nil},
		{"a chat template doubling a string", hf.TokenizerConfigName,
			withTemplate("{% set s = namespace(v='ab') %}{% for i in range(60) %}{% set s.v = s.v + s.v %}{% endfor %}{{ s.v }}"),
			program.AssetTokenizerConfig, func(err error) bool { return errors.Is(err, chat.ErrLimit) }},
		{"a chat template spinning", hf.TokenizerConfigName,
			withTemplate("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
			program.AssetTokenizerConfig, func(err error) bool { return errors.Is(err, chat.ErrLimit) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := storiesWith(t, nil).(fstest.MapFS)
			fsys[c.file] = &fstest.MapFile{Data: c.data}
			ckpt, err := hf.Open(fs.FS(fsys))
			if err != nil {
				t.Fatal(err)
			}
			defer ckpt.Close()
			var buf bytes.Buffer
			_, err = export.Export(context.Background(), ckpt, &buf, export.Options{Context: 32})
			var ae *export.AssetError
			if !errors.As(err, &ae) || ae.Asset != c.asset || (c.is != nil && !c.is(err)) {
				t.Fatalf("Export = %v, want an *AssetError about %s", err, c.asset)
			}
			if !strings.Contains(err.Error(), c.asset) {
				t.Errorf("error %q does not name %s", err, c.asset)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before refusing", buf.Len())
			}
		})
	}
}
