package field

import "testing"

func TestDTypeName(t *testing.T) {
	for in, want := range map[string]string{
		"|u1": "uint8", "<f2": "float16", "<f4": "float32", "<i8": "int64", ">i4": "int32 (big-endian)",
		"|b1": "bool", "<c16": "complex128", "|S7": "bytes7", "uint8": "uint8", "<x3": "<x3",
	} {
		if got := DTypeName(in); got != want {
			t.Errorf("DTypeName(%q) = %q, want %q", in, got, want)
		}
	}
}
