//go:build asmgen

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The encoder against the GNU assembler (binutils-aarch64-linux-gnu 2.40,
// `aarch64-linux-gnu-as -march=armv8.6-a+dotprod+i8mm`, then objdump -d):
// each form, low and high registers, every lane index. The Arm text is
// objdump's, so the comments in the generated file read as it does.
func TestEncoderMatchesGNUAssembler(t *testing.T) {
	cases := []struct {
		got  encoded
		word uint32
		arm  string
	}{
		{enc3("fadd", 0, 1, 2), 0x4e22d420, "fadd v0.4s, v1.4s, v2.4s"},
		{enc3("fadd", 31, 17, 9), 0x4e29d63f, "fadd v31.4s, v17.4s, v9.4s"},
		{enc3("fsub", 3, 30, 16), 0x4eb0d7c3, "fsub v3.4s, v30.4s, v16.4s"},
		{enc3("fmul", 19, 17, 18), 0x6e32de33, "fmul v19.4s, v17.4s, v18.4s"},
		{enc3("fdiv", 5, 6, 31), 0x6e3ffcc5, "fdiv v5.4s, v6.4s, v31.4s"},
		{enc3("fmax", 8, 8, 9), 0x4e29f508, "fmax v8.4s, v8.4s, v9.4s"},
		{enc3("fmin", 21, 22, 23), 0x4eb7f6d5, "fmin v21.4s, v22.4s, v23.4s"},
		{enc3("faddp", 20, 20, 20), 0x6e34d694, "faddp v20.4s, v20.4s, v20.4s"},
		{enc3("fmaxp", 1, 2, 3), 0x6e23f441, "fmaxp v1.4s, v2.4s, v3.4s"},
		{enc3("fcmgt", 4, 5, 6), 0x6ea6e4a4, "fcmgt v4.4s, v5.4s, v6.4s"},
		{enc3("smax", 7, 8, 9), 0x4ea96507, "smax v7.4s, v8.4s, v9.4s"},
		{enc3("sdot", 8, 4, 0), 0x4e809488, "sdot v8.4s, v4.16b, v0.16b"},
		{enc3("sdot", 31, 30, 29), 0x4e9d97df, "sdot v31.4s, v30.16b, v29.16b"},
		{enc3("smmla", 14, 2, 10), 0x4e8aa44e, "smmla v14.4s, v2.16b, v10.16b"},
		{enc3("smmla", 31, 16, 1), 0x4e81a61f, "smmla v31.4s, v16.16b, v1.16b"},
		{enc2("fcvtl", 17, 17), 0x0e217a31, "fcvtl v17.4s, v17.4h"},
		{enc2("fcvtl2", 30, 1), 0x4e21783e, "fcvtl2 v30.4s, v1.8h"},
		{enc2("fcvtn", 0, 31), 0x0e216be0, "fcvtn v0.4h, v31.4s"},
		{enc2("fcvtn2", 2, 3), 0x4e216862, "fcvtn2 v2.8h, v3.4s"},
		{enc2("scvtf", 16, 16), 0x4e21da10, "scvtf v16.4s, v16.4s"},
		{enc2("fcvtns", 7, 25), 0x4e21ab27, "fcvtns v7.4s, v25.4s"},
		{enc2("fcvtzs", 8, 9), 0x4ea1b928, "fcvtzs v8.4s, v9.4s"},
		{enc2("frintn", 10, 11), 0x4e21896a, "frintn v10.4s, v11.4s"},
		{enc2("fabs", 15, 7), 0x4ea0f8ef, "fabs v15.4s, v7.4s"},
		{enc2("fneg", 12, 13), 0x6ea0f9ac, "fneg v12.4s, v13.4s"},
		{enc2("fsqrt", 14, 15), 0x6ea1f9ee, "fsqrt v14.4s, v15.4s"},
		{enc2("sqxtn", 0, 0), 0x0e614800, "sqxtn v0.4h, v0.4s"},
		{enc2("sqxtn2", 6, 7), 0x4e6148e6, "sqxtn2 v6.8h, v7.4s"},
		{enc2("sqxtnb", 1, 4), 0x0e214881, "sqxtn v1.8b, v4.8h"},
		{enc2("sqxtnb2", 0, 2), 0x4e214840, "sqxtn2 v0.16b, v2.8h"},
		{enc2("shll", 3, 4), 0x2e613883, "shll v3.4s, v4.4h, #16"},
		{enc2("shll2", 5, 31), 0x6e613be5, "shll2 v5.4s, v31.8h, #16"},
		{enc2("faddps", 20, 20), 0x7e30da94, "faddp s20, v20.2s"},
		{enc2("fmaxv", 8, 8), 0x6e30f908, "fmaxv s8, v8.4s"},
		{enc2("addv", 9, 9), 0x4eb1b929, "addv s9, v9.4s"},
		{encElem("fmla", 0, 1, 2, 0), 0x4f821020, "fmla v0.4s, v1.4s, v2.s[0]"},
		{encElem("fmla", 31, 16, 31, 3), 0x4fbf1a1f, "fmla v31.4s, v16.4s, v31.s[3]"},
		{encElem("fmla", 20, 7, 18, 1), 0x4fb210f4, "fmla v20.4s, v7.4s, v18.s[1]"},
		{encElem("fmul", 16, 0, 18, 2), 0x4f929810, "fmul v16.4s, v0.4s, v18.s[2]"},
		{encElem("fmul", 0, 0, 17, 0), 0x4f919000, "fmul v0.4s, v0.4s, v17.s[0]"},
		{encElem("sdot", 14, 2, 10, 0), 0x4f8ae04e, "sdot v14.4s, v2.16b, v10.4b[0]"},
		{encElem("sdot", 15, 9, 13, 3), 0x4fade92f, "sdot v15.4s, v9.16b, v13.4b[3]"},
		{encElem("sdot", 31, 17, 16, 1), 0x4fb0e23f, "sdot v31.4s, v17.16b, v16.4b[1]"},
		{encElem("sdot", 5, 31, 30, 2), 0x4f9eebe5, "sdot v5.4s, v31.16b, v30.4b[2]"},
		{encSSHRB(0, 1, 4), 0x4f0c0420, "sshr v0.16b, v1.16b, #4"},
		{encSSHRB(31, 2, 8), 0x4f08045f, "sshr v31.16b, v2.16b, #8"},
		{encSSHRB(3, 30, 1), 0x4f0f07c3, "sshr v3.16b, v30.16b, #1"},
		{encLD4Lane(4, 7, 0), 0x0dffa0e4, "ld4 {v4.s-v7.s}[0], [x7], #16"},
		{encLD4Lane(4, 7, 1), 0x0dffb0e4, "ld4 {v4.s-v7.s}[1], [x7], #16"},
		{encLD4Lane(4, 7, 2), 0x4dffa0e4, "ld4 {v4.s-v7.s}[2], [x7], #16"},
		{encLD4Lane(4, 7, 3), 0x4dffb0e4, "ld4 {v4.s-v7.s}[3], [x7], #16"},
		{encLD4Lane(4, 22, 1), 0x0dffb2c4, "ld4 {v4.s-v7.s}[1], [x22], #16"},
	}
	for _, c := range cases {
		if c.got.word != c.word || c.got.arm != c.arm {
			t.Errorf("%s: encoded %#08x (%q), GNU as gives %#08x", c.arm, c.got.word, c.got.arm, c.word)
		}
	}
}

// Every WORD in the generated file assembles, from its comment, to the
// same bytes with the GNU assembler (it must be installed: Debian's
// binutils-aarch64-linux-gnu; .ci/run installs it).
func TestGeneratedWordsMatchGNUAssembler(t *testing.T) {
	as, err := exec.LookPath("aarch64-linux-gnu-as")
	if err != nil {
		t.Fatal("aarch64-linux-gnu-as not found: apt-get install binutils-aarch64-linux-gnu")
	}
	a := emit()
	seen := map[string]uint32{}
	var src bytes.Buffer
	var order []string
	for _, w := range a.words {
		if prev, ok := seen[w.arm]; ok {
			if prev != w.word {
				t.Fatalf("%s encoded both %#08x and %#08x", w.arm, prev, w.word)
			}
			continue
		}
		seen[w.arm] = w.word
		order = append(order, w.arm)
		fmt.Fprintln(&src, w.arm)
	}
	dir := t.TempDir()
	in, obj := filepath.Join(dir, "w.s"), filepath.Join(dir, "w.o")
	if err := os.WriteFile(in, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "-march=armv8.6-a+dotprod+i8mm", "-o", obj, in).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", as, err, out)
	}
	dump, err := exec.Command(strings.TrimSuffix(as, "-as")+"-objdump", "-d", obj).Output()
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s+[0-9a-f]+:\s+([0-9a-f]{8})\s`)
	words := re.FindAllStringSubmatch(string(dump), -1)
	if len(words) != len(order) {
		t.Fatalf("objdump lists %d words for %d instructions", len(words), len(order))
	}
	for i, m := range words {
		w, _ := strconv.ParseUint(m[1], 16, 32)
		if uint32(w) != seen[order[i]] {
			t.Errorf("%s: encoded %#08x, GNU as gives %#08x", order[i], seen[order[i]], w)
		}
	}
	t.Logf("%d distinct encoded instructions checked", len(order))
}
