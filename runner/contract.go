package runner

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hfstatic/hfstatic/program"
)

// ErrUnknownContract is wrapped by a *ContractError for a program whose contract name or
// version has no registered I/O manager.
var ErrUnknownContract = errors.New("unknown I/O contract")

// ContractError reports metadata or a tensor spec that violates the program's contract.
// Field names the offending metadata field, method or tensor.
type ContractError struct {
	Field   string
	Problem string
	Err     error // optional sentinel, e.g. ErrUnknownContract
}

func (e *ContractError) Error() string {
	if e.Field == "contract" { // the contract itself: "contract: contract:" would say it twice
		return "contract: " + e.Problem
	}
	return fmt.Sprintf("contract: %s: %s", e.Field, e.Problem)
}

func (e *ContractError) Unwrap() error { return e.Err }

// contractKey identifies an I/O contract.
type contractKey struct {
	name    string
	version int
}

// contracts is the registry of I/O contracts this runner drives, keyed by (name, version).
var contracts = map[contractKey]func(*program.Manifest) error{
	{program.ContractName, program.ContractVersion}:             validateHFStaticV1,
	{program.EncodeContractName, program.EncodeContractVersion}: validateHFEncodeV1,
}

// Contracts lists the registered contracts as "name/version".
func Contracts() []string {
	var out []string
	for k := range contracts {
		out = append(out, fmt.Sprintf("%s/v%d", k.name, k.version))
	}
	slices.Sort(out)
	return out
}

// ValidateContract selects the program's contract from the registry and checks the
// manifest against it.
func ValidateContract(m *program.Manifest) error {
	md := m.Metadata
	v, ok := contracts[contractKey{md.Contract, md.Version}]
	if !ok {
		problem := fmt.Sprintf("%q version %d is not supported (supported: %v)", md.Contract, md.Version, Contracts())
		if newest := newestVersion(md.Contract); newest > 0 && md.Version > newest {
			problem += ": the program was made by a newer hfstatic; upgrade hfstatic, or re-export the model with this one"
		}
		return &ContractError{Field: "contract", Err: ErrUnknownContract, Problem: problem}
	}
	return v(m)
}

// newestVersion is the highest registered version of the named contract (0: none).
func newestVersion(name string) int {
	v := 0
	for k := range contracts {
		if k.name == name {
			v = max(v, k.version)
		}
	}
	return v
}

func cerr(field, format string, args ...any) error {
	return &ContractError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// validateHFStaticV1 checks a manifest against docs/contract.md ("Metadata", "The tensors of
// one step", "Load-time rejections").
func validateHFStaticV1(m *program.Manifest) error {
	md := &m.Metadata
	C := md.MaxContext
	if C < 1 {
		return cerr("max_context", "%d must be ≥ 1", C)
	}
	if md.VocabSize < 1 {
		return cerr("vocab_size", "%d must be ≥ 1", md.VocabSize)
	}
	if md.CacheDType != program.F16 && md.CacheDType != program.F32 {
		return cerr("cache_dtype", "%q: caches must be f16 or f32", md.CacheDType)
	}
	if md.Encoder != nil {
		return cerr("encoder", "hf_static programs have no encoder metadata (hf_encode programs do)")
	}
	if md.SlidingLayout != program.LayoutRing && md.SlidingLayout != program.LayoutFull {
		return cerr("sliding_layout", "%q must be ring or full", md.SlidingLayout)
	}
	if len(md.Layers) == 0 {
		return cerr("layers", "no layers")
	}
	sliding := false
	for l, ly := range md.Layers {
		f := fmt.Sprintf("layers[%d]", l)
		if ly.KVHeads < 1 || ly.KHeadDim < 1 || ly.VHeadDim < 1 {
			return cerr(f, "kv_heads %d, k_head_dim %d, v_head_dim %d must be ≥ 1", ly.KVHeads, ly.KHeadDim, ly.VHeadDim)
		}
		if ly.Type != program.LayerFull && ly.Type != program.LayerSliding {
			return cerr(f+".type", "%q is not full or sliding", ly.Type)
		}
		sliding = sliding || ly.Type == program.LayerSliding
	}
	if sliding != (md.SlidingWindow > 0) {
		return cerr("sliding_window", "%d: must be > 0 exactly when some layer slides", md.SlidingWindow)
	}
	for l, ly := range md.Layers {
		f := fmt.Sprintf("layers[%d]", l)
		want := C
		if ly.Type == program.LayerSliding && md.SlidingLayout == program.LayoutRing {
			want = min(md.SlidingWindow, C)
		}
		if ly.CacheRows != want {
			if ly.Type == program.LayerSliding && ly.CacheRows == C {
				return cerr(f+".cache_rows", "sliding layer has a full-length cache (%d rows) but the program declares the ring layout (want %d)", C, want)
			}
			return cerr(f+".cache_rows", "%d, want %d", ly.CacheRows, want)
		}
	}
	if err := checkTokens(md); err != nil {
		return err
	}
	dec, ok := m.Method(program.MethodDecode)
	if !ok {
		return cerr("methods", "no %q method (required)", program.MethodDecode)
	}
	if dec.Step != 1 {
		return cerr("decode.step", "%d, must be 1", dec.Step)
	}
	if err := checkMethodIO(md, dec); err != nil {
		return err
	}
	if pre, ok := m.Method(program.MethodPrefill); ok {
		if pre.Step < 2 || pre.Step > C {
			return cerr("prefill.step", "%d must be in 2..%d", pre.Step, C)
		}
		if err := checkMethodIO(md, pre); err != nil {
			return err
		}
	}
	return nil
}

// checkTokens checks that the special token ids lie in the vocabulary.
func checkTokens(md *program.Metadata) error {
	for _, id := range md.Tokens.EOS {
		if id < 0 || id >= int64(md.VocabSize) {
			return cerr("tokens.eos", "id %d outside the vocabulary [0,%d)", id, md.VocabSize)
		}
	}
	if b := md.Tokens.BOS; b != nil && (*b < 0 || *b >= int64(md.VocabSize)) {
		return cerr("tokens.bos", "id %d outside the vocabulary [0,%d)", *b, md.VocabSize)
	}
	if p := md.Tokens.Pad; p < 0 || p >= int64(md.VocabSize) {
		return cerr("tokens.pad", "id %d outside the vocabulary [0,%d)", p, md.VocabSize)
	}
	return nil
}

// checkMethodIO checks a method's inputs and outputs against the metadata. Because both
// methods are checked against the same per-layer metadata, prefill and decode agree on
// every cache.
func checkMethodIO(md *program.Metadata, mt *program.Method) error {
	if mt.Logits != program.LogitsLast && mt.Logits != program.LogitsAll {
		return cerr(mt.Name+".logits", "%q must be all or last", mt.Logits)
	}
	want, wantOut := program.MethodIO(md, mt.Step, mt.Logits)
	if err := matchIO(mt.Name+" input", mt.Inputs, want); err != nil {
		return err
	}
	return matchIO(mt.Name+" output", mt.Outputs, wantOut)
}

func matchIO(what string, got, want []program.IO) error {
	byName := map[string]program.IO{}
	for _, b := range got {
		byName[b.Name] = b
	}
	for _, w := range want {
		g, ok := byName[w.Name]
		if !ok {
			return cerr(what+" "+w.Name, "missing")
		}
		if g.DType != w.DType || !g.Shape.Equal(w.Shape) {
			if w.DType == program.F16 || w.DType == program.F32 {
				if g.DType.Quantized() {
					return cerr(what+" "+w.Name, "quantized cache dtype %s; caches must be f16 or f32", g.DType)
				}
			}
			return cerr(what+" "+w.Name, "%s %v, want %s %v", g.DType, g.Shape, w.DType, w.Shape)
		}
		delete(byName, w.Name)
	}
	for n := range byName {
		return cerr(what+" "+n, "not part of the contract")
	}
	return nil
}
