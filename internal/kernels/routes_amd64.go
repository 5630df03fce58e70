//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// The routes of amd64, best first. avx512 needs AVX-512 F/BW/VL/DQ plus FMA,
// F16C and AVX2; +vnni adds the int8 dot products (VPDPBUSD) of AVX512_VNNI; avx2
// needs AVX2, FMA and F16C; its +vnni adds AVX-VNNI, the VEX-encoded
// VPDPBUSD on ymm registers (Intel Alder Lake and later, AMD Zen 4 and 5).
var routeSpecs = []routeSpec{
	{"avx512+vnni", append(avx512Needs(), feature{"avx512vnni", cpu.X86.HasAVX512VNNI}), func() { setRoute(true, false, true, false) }},
	{"avx512", avx512Needs(), func() { setRoute(true, false, false, false) }},
	{"avx2+vnni", append(avx2Needs(), feature{"avxvnni", cpu.X86.HasAVXVNNI}), func() { setRoute(false, true, false, true) }},
	{"avx2", avx2Needs(), func() { setRoute(false, true, false, false) }},
	{"generic", nil, func() { setRoute(false, false, false, false) }},
}

func avx512Needs() []feature {
	return []feature{{"avx512f", cpu.X86.HasAVX512F}, {"avx512bw", cpu.X86.HasAVX512BW}, {"avx512vl", cpu.X86.HasAVX512VL},
		{"avx512dq", cpu.X86.HasAVX512DQ}, {"fma", cpu.X86.HasFMA}, {"f16c", cpu.X86.HasF16C},
		{"avx2", cpu.X86.HasAVX2}} // (every AVX-512 CPU has it; avx512 takes the AVX2 int8 kernels)
}

func avx2Needs() []feature {
	return []feature{{"avx2", cpu.X86.HasAVX2}, {"fma", cpu.X86.HasFMA}, {"f16c", cpu.X86.HasF16C}}
}

func setRoute(avx512, avx2, vnni, avxvnni bool) {
	useAVX512, useAVX2, useVNNI, useAVXVNNI = avx512, avx2, vnni, avxvnni
}
