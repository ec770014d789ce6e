package field

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func boxBytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Boxes are checked against the source image and scaled to the stored one.
func TestRaggedEncoderScalesBoxes(t *testing.T) {
	enc, err := NewTargetEncoder(Desc{Type: Ragged, Name: "boxes", Target: &TargetArgs{DType: "<f4", RowShape: []uint64{4}, Follows: "image", Coords: "xyxy"}})
	if err != nil {
		t.Fatal(err)
	}
	img := ImageGeometry{SrcW: 200, SrcH: 100, W: 100, H: 50}
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte
		err  bool
	}{
		{"halved", boxBytes(10, 20, 200, 100), boxBytes(5, 10, 100, 50), false},
		{"no boxes", nil, nil, false},
		{"outside", boxBytes(10, 20, 201, 100), nil, true},
		{"inverted", boxBytes(30, 20, 10, 40), nil, true},
		{"partial row", boxBytes(1, 2, 3), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := enc.(Follower).EncodeFollowing(Value{Data: tc.in}, 0, img)
			if tc.err {
				if !errors.Is(err, ErrData) {
					t.Fatalf("err = %v, want ErrData", err)
				}
				return
			}
			if err != nil || !bytes.Equal(e.Heap, tc.want) {
				t.Fatalf("heap %v, err %v; want %v", e.Heap, err, tc.want)
			}
			if _, rows := RaggedRef(e.Column); rows != uint64(len(tc.want)/16) {
				t.Fatalf("rows %d", rows)
			}
		})
	}
}

// A mask is resized nearest-neighbour to its image's stored size and
// round-trips losslessly through its encoding.
func TestMaskRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dtype  string
		item   int
		w, h   int
		sw, sh int
		random bool
	}{
		{"uint8 regions", "|u1", 1, 64, 48, 64, 48, false},
		{"uint16 regions", "<u2", 2, 64, 48, 64, 48, false},
		{"uint8 noise (stored raw)", "|u1", 1, 40, 30, 40, 30, true},
		{"downscaled", "|u1", 1, 100, 60, 50, 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, err := NewTargetEncoder(Desc{Type: Mask, Name: "mask", Target: &TargetArgs{DType: tc.dtype, Follows: "image", Encoding: "lz4"}})
			if err != nil {
				t.Fatal(err)
			}
			src := make([]byte, tc.w*tc.h*tc.item)
			r := rand.New(rand.NewPCG(1, 2))
			for i := range src {
				if tc.random {
					src[i] = byte(r.IntN(256))
				} else {
					src[i] = byte((i / tc.item % tc.w / 16) + 3*(i/tc.item/tc.w/16))
				}
			}
			e, err := enc.(Follower).EncodeFollowing(Value{Data: src, Width: tc.w, Height: tc.h}, 0,
				ImageGeometry{SrcW: tc.w, SrcH: tc.h, W: tc.sw, H: tc.sh})
			if err != nil {
				t.Fatal(err)
			}
			m := ParseMaskMeta(e.Column)
			if m.Width != tc.sw || m.Height != tc.sh || m.Size != uint64(len(e.Heap)) {
				t.Fatalf("meta %+v, heap %d", m, len(e.Heap))
			}
			out := make([]byte, tc.sw*tc.sh*tc.item)
			if err := DecodeMask(m, e.Heap, out); err != nil {
				t.Fatal(err)
			}
			want := src
			if tc.sw != tc.w {
				want = make([]byte, len(out))
				ResizeNearest(want, tc.sw, tc.sh, src, tc.w, tc.h, tc.item)
				// halving takes the source pixel under each centre: odd rows and columns
				if want[tc.sw+1] != src[3*tc.w+3] {
					t.Fatalf("nearest-neighbour picks the wrong pixels")
				}
			}
			if !bytes.Equal(out, want) {
				t.Fatal("mask changed through its encoding")
			}
			if (m.Encoding == MaskRaw) != tc.random {
				t.Fatalf("encoding %d for random=%v", m.Encoding, tc.random)
			}
		})
	}
	enc, _ := NewTargetEncoder(Desc{Type: Mask, Name: "mask", Target: &TargetArgs{DType: "|u1", Follows: "image", Encoding: "lz4"}})
	_, err := enc.(Follower).EncodeFollowing(Value{Data: make([]byte, 12), Width: 4, Height: 3}, 0, ImageGeometry{SrcW: 3, SrcH: 4, W: 3, H: 4})
	if !errors.Is(err, ErrData) {
		t.Fatalf("a mask of another size: err = %v", err)
	}
}

func TestTargetDescRoundTrip(t *testing.T) {
	for _, d := range []Desc{
		{Type: Ragged, Name: "boxes", Target: &TargetArgs{DType: "<f4", RowShape: []uint64{4}, Follows: "image", Coords: "xyxy"}},
		{Type: Ragged, Name: "labels", Target: &TargetArgs{DType: "<i8", Follows: "boxes"}},
		{Type: Ragged, Name: "kp", Target: &TargetArgs{DType: "<f4", RowShape: []uint64{17, 3}, Follows: "image", Coords: "xy"}},
		{Type: Mask, Name: "mask", Target: &TargetArgs{DType: "<u2", Follows: "image", Encoding: "lz4"}},
	} {
		b, err := d.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseDesc(b)
		if err != nil || got.Type != d.Type || got.DType != d.Target.DType || got.Target.Follows != d.Target.Follows ||
			got.Target.Coords != d.Target.Coords || len(got.Shape) != len(d.Target.RowShape) {
			t.Fatalf("%s: got %+v %+v, err %v", d.Name, got, got.Target, err)
		}
	}
	for _, bad := range []Desc{
		{Type: Ragged, Name: "b", Target: &TargetArgs{DType: "<i4", RowShape: []uint64{4}, Follows: "image", Coords: "xyxy"}},
		{Type: Ragged, Name: "b", Target: &TargetArgs{DType: "<f4", RowShape: []uint64{3}, Follows: "image", Coords: "xyxy"}},
		{Type: Mask, Name: "m", Target: &TargetArgs{DType: "<f4", Follows: "image", Encoding: "lz4"}},
		{Type: Mask, Name: "m", Target: &TargetArgs{DType: "|u1", Encoding: "lz4"}},
	} {
		if _, err := bad.MarshalBinary(); err == nil {
			t.Errorf("%+v: no error", bad.Target)
		}
	}
}
