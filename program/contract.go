package program

import "fmt"

// The hf_static contract, version 1 (docs/contract.md): the one definition of its name,
// method names, I/O names, method I/O specs and asset names. The exporter writes it, the
// graph builder (internal/arch/decoder) builds methods to it and the runner's contract
// registry validates programs against it.
const (
	ContractName    = "hf_static"
	ContractVersion = 1
)

// Method names of the hf_static contract: decode (step 1) is required, prefill (step P ≥ 2)
// is optional.
const (
	MethodDecode  = "decode"
	MethodPrefill = "prefill"
)

// Standard I/O names of the hf_static contract.
const (
	InputIDs      = "input_ids"
	AttentionMask = "attention_mask"
	PositionIDs   = "position_ids"
	Logits        = "logits"
)

// KCache, VCache and Counter name layer l's cache buffers.
func KCache(l int) string  { return fmt.Sprintf("k_cache_%d", l) }
func VCache(l int) string  { return fmt.Sprintf("v_cache_%d", l) }
func Counter(l int) string { return fmt.Sprintf("counter_%d", l) }

// Asset names of the tokenizer files a program may embed.
const (
	AssetTokenizer       = "tokenizer.json"
	AssetTokenizerConfig = "tokenizer_config.json"
)

// MethodIO returns the inputs and outputs the hf_static contract requires of a method of
// step rows returning the given logits rows (LogitsLast: one row; otherwise step rows),
// over the caches md declares:
//
//	inputs:  input_ids i64 [1, S], attention_mask bool [1, 1, S, C], position_ids i64 [1, S],
//	         then per layer l: k_cache_l, v_cache_l (cache dtype [1, kv_heads, cache_rows, head_dim]),
//	         counter_l i64 []
//	outputs: logits f32 [1, rows, V], then the same per-layer caches and counters (in place)
func MethodIO(md *Metadata, step int, logits LogitsRows) (inputs, outputs []IO) {
	S, C := step, md.MaxContext
	inputs = []IO{
		{Name: InputIDs, DType: I64, Shape: Shape{1, S}},
		{Name: AttentionMask, DType: Bool, Shape: Shape{1, 1, S, C}},
		{Name: PositionIDs, DType: I64, Shape: Shape{1, S}},
	}
	rows := S
	if logits == LogitsLast {
		rows = 1
	}
	outputs = []IO{{Name: Logits, DType: F32, Shape: Shape{1, rows, md.VocabSize}}}
	for l, ly := range md.Layers {
		state := []IO{
			{Name: KCache(l), DType: md.CacheDType, Shape: Shape{1, ly.KVHeads, ly.CacheRows, ly.KHeadDim}},
			{Name: VCache(l), DType: md.CacheDType, Shape: Shape{1, ly.KVHeads, ly.CacheRows, ly.VHeadDim}},
			{Name: Counter(l), DType: I64, Shape: Shape{}},
		}
		inputs = append(inputs, state...)
		outputs = append(outputs, state...)
	}
	return inputs, outputs
}
