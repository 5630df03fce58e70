package safetensors

import "fmt"

// DType is a safetensors element type.
type DType uint8

// The element types a safetensors header may name.
const (
	InvalidDType DType = iota
	F64
	F32
	F16
	BF16
	I64
	I32
	I16
	I8
	U64
	U32
	U16
	U8
	BOOL
	F8E4M3
	F8E5M2
)

var dtypeInfo = [...]struct {
	name string
	size int
}{
	InvalidDType: {"invalid", 0},
	F64:          {"F64", 8},
	F32:          {"F32", 4},
	F16:          {"F16", 2},
	BF16:         {"BF16", 2},
	I64:          {"I64", 8},
	I32:          {"I32", 4},
	I16:          {"I16", 2},
	I8:           {"I8", 1},
	U64:          {"U64", 8},
	U32:          {"U32", 4},
	U16:          {"U16", 2},
	U8:           {"U8", 1},
	BOOL:         {"BOOL", 1},
	F8E4M3:       {"F8_E4M3", 1},
	F8E5M2:       {"F8_E5M2", 1},
}

// String returns the name used in safetensors headers, e.g. "BF16".
func (d DType) String() string {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].name
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Size returns the size of one element in bytes (0 for an invalid DType).
func (d DType) Size() int {
	if int(d) < len(dtypeInfo) {
		return dtypeInfo[d].size
	}
	return 0
}

// ParseDType returns the DType named s as it appears in a header ("F32", "BF16", …).
func ParseDType(s string) (DType, bool) {
	for d := F64; int(d) < len(dtypeInfo); d++ {
		if dtypeInfo[d].name == s {
			return d, true
		}
	}
	return InvalidDType, false
}
