package tokenizer_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"

	"github.com/hfstatic/hfstatic/tokenizer"
)

func gunzipFile(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		panic(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		panic(err)
	}
	return bytes.Clone(data)
}

func Example() {
	tok, err := tokenizer.Load(gunzipFile("testdata/stories260K.tokenizer.json.gz"),
		gunzipFile("testdata/stories260K.tokenizer_config.json.gz"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, _ := tok.Encode("Once upon a time", true) // with BOS
	fmt.Println(ids)

	// Stream the ids back as a generator would produce them.
	st := tok.NewStream(true) // skip special tokens
	for _, id := range ids {
		piece, _ := st.Add(id)
		fmt.Printf("%q ", piece)
	}
	fmt.Printf("%q\n", st.Flush())
	// Output:
	// [1 403 407 261 378]
	// "" "Once" " upon" " a" " time" ""
}
