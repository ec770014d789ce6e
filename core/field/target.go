package field

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/pierrec/lz4/v4"
)

// Detection and segmentation targets. Their type ids lie far from FFCV's
// (0-6 and 255), which cannot read them: FFCV fails on an unknown type id.
const (
	Ragged Type = 100 // RaggedArrayField: (N, *row_shape) of one dtype per sample, N ≥ 0
	Mask   Type = 101 // MaskField: an (H, W) uint8/uint16 label map at its image's stored size
)

// Targets reports whether t is one of the target types, whose descriptor
// arguments are JSON (TargetArgs).
func (t Type) Targets() bool { return t == Ragged || t == Mask }

// TargetArgs are the descriptor arguments of Ragged and Mask fields, stored
// as JSON (zero-padded) in the 1024 argument bytes.
type TargetArgs struct {
	DType    string   `json:"dtype"`
	RowShape []uint64 `json:"row_shape,omitempty"`
	// Follows names the image field whose geometry the values live in: the
	// writer scales coordinates (Coords) and resizes masks to that image's
	// stored size.
	Follows string `json:"follows,omitempty"`
	// Coords says which values of a row are pixel coordinates: "xyxy"
	// (boxes: x0, y0, x1, y1) or "xy" (points: x, y first in the last
	// axis, e.g. keypoints (K, 3) as x, y, visibility); "polygon" (row
	// shape (K, 2): one instance's outline as K x, y vertices, clipped to
	// the image where it leaves it); "" for none.
	Coords string `json:"coords,omitempty"`
	// Encoding of masks: "lz4" (an LZ4 block of the raw little-endian
	// pixels; stored raw, column encoding 0, when it does not shrink).
	Encoding string `json:"encoding,omitempty"`
}

// Target columns, align 8: Ragged {ptr u64, rows u64}; Mask {ptr u64,
// size u64, width u32, height u32, encoding u8, 7 zero bytes}.
const (
	RaggedColumnSize = 16
	MaskColumnSize   = 32
	MaskRaw          = 0
	MaskLZ4          = 1
)

func (d *Desc) targetArgs() (TargetArgs, error) {
	var a TargetArgs
	b := d.Args
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("field %q: %v arguments: %w", d.Name, d.Type, err)
	}
	return a, nil
}

// setTarget fills Shape, DType and Target from Args.
func (d *Desc) setTarget() error {
	a, err := d.targetArgs()
	if err != nil {
		return err
	}
	d.Target, d.DType, d.Shape = &a, a.DType, a.RowShape
	if err := d.checkTarget(); err != nil {
		return err
	}
	// Args in canonical form, so equal fields have equal arguments (shards).
	d.Args = make([]byte, ArgsSize)
	return d.marshalTarget(d.Args)
}

func (d *Desc) checkTarget() error {
	a := d.Target
	if a == nil {
		return fmt.Errorf("field %q: %v without arguments", d.Name, d.Type)
	}
	d.DType, d.Shape = a.DType, a.RowShape
	if _, err := d.ItemSize(); err != nil {
		return err
	}
	if d.Type == Mask {
		if a.DType != "|u1" && a.DType != "<u2" {
			return fmt.Errorf("field %q: mask dtype %s must be uint8 or uint16", d.Name, DTypeName(a.DType))
		}
		if a.Follows == "" {
			return fmt.Errorf("field %q: a mask must follow an image field", d.Name)
		}
		if a.Encoding != "lz4" {
			return fmt.Errorf("field %q: mask encoding %q (want lz4)", d.Name, a.Encoding)
		}
		return nil
	}
	if len(a.RowShape) > maxDims-1 {
		return fmt.Errorf("field %q: row shape %v has too many dimensions", d.Name, a.RowShape)
	}
	row, _ := d.ItemSize()
	for _, x := range a.RowShape {
		if x == 0 || x > 1<<24 {
			return fmt.Errorf("field %q: row shape %v must have positive dimensions", d.Name, a.RowShape)
		}
		// A row must fit a page, which holds at most 4 GiB.
		if row *= int(x); row > 1<<32 {
			return fmt.Errorf("field %q: rows of shape %v are too large", d.Name, a.RowShape)
		}
	}
	switch a.Coords {
	case "":
	case "xyxy", "xy", "polygon":
		last := uint64(1)
		if len(a.RowShape) > 0 {
			last = a.RowShape[len(a.RowShape)-1]
		}
		if (a.Coords == "xyxy" && (len(a.RowShape) != 1 || last != 4)) || (a.Coords == "xy" && last < 2) ||
			(a.Coords == "polygon" && (len(a.RowShape) != 2 || last != 2 || a.RowShape[0] < 3)) {
			return fmt.Errorf("field %q: coords %q do not fit row shape %v", d.Name, a.Coords, a.RowShape)
		}
		if a.DType != "<f4" && a.DType != "<f8" {
			return fmt.Errorf("field %q: coordinates need float32 or float64, not %s", d.Name, DTypeName(a.DType))
		}
	default:
		return fmt.Errorf("field %q: coords %q must be 'xyxy', 'xy', 'polygon' or empty", d.Name, a.Coords)
	}
	if a.Coords != "" && a.Follows == "" {
		return fmt.Errorf("field %q: coordinates need the image field they follow", d.Name)
	}
	return nil
}

func (d *Desc) marshalTarget(args []byte) error {
	if d.Target == nil {
		d.Target = &TargetArgs{DType: d.DType, RowShape: d.Shape}
	}
	if err := d.checkTarget(); err != nil {
		return err
	}
	b, err := json.Marshal(d.Target)
	if err != nil {
		return err
	}
	if len(b) >= ArgsSize {
		return fmt.Errorf("field %q: arguments too long", d.Name)
	}
	copy(args, b)
	return nil
}

// RowBytes is the byte size of one row of a Ragged field.
func (d *Desc) RowBytes() (uint64, error) {
	n, err := d.ItemSize()
	if err != nil {
		return 0, err
	}
	total := uint64(n)
	for _, x := range d.Shape {
		total *= x
	}
	return total, nil
}

// RaggedRef decodes a Ragged column: heap pointer and number of rows.
func RaggedRef(col []byte) (ptr, rows uint64) {
	return binary.LittleEndian.Uint64(col), binary.LittleEndian.Uint64(col[8:])
}

// MaskMeta is a Mask column, decoded.
type MaskMeta struct {
	Ptr, Size     uint64
	Width, Height int
	Encoding      byte
}

// ParseMaskMeta decodes a Mask column.
func ParseMaskMeta(col []byte) MaskMeta {
	return MaskMeta{
		Ptr: binary.LittleEndian.Uint64(col), Size: binary.LittleEndian.Uint64(col[8:]),
		Width: int(binary.LittleEndian.Uint32(col[16:])), Height: int(binary.LittleEndian.Uint32(col[20:])),
		Encoding: col[24],
	}
}

// maxLZ4Ratio bounds the bytes an LZ4 block decodes to per stored byte:
// a match grows by at most 255 bytes per byte of its length.
const maxLZ4Ratio = 255

// Pixels checks a stored mask's metadata against its heap bytes (heap)
// and the field's item size, and returns the bytes its pixels take: a
// mask its stored bytes cannot hold is an error before anything is
// allocated for it.
func (m MaskMeta) Pixels(item, heap int) (int, error) {
	if m.Width < 1 || m.Height < 1 {
		return 0, fmt.Errorf("%w: mask of %dx%d", ErrData, m.Width, m.Height)
	}
	if m.Size != uint64(heap) {
		return 0, fmt.Errorf("%w: mask of %d stored bytes, %d in the heap", ErrData, m.Size, heap)
	}
	// Width and height are u32s: their product times 2 fits a uint64.
	n := uint64(m.Width) * uint64(m.Height) * uint64(item)
	switch m.Encoding {
	case MaskRaw:
		if n != uint64(heap) {
			return 0, fmt.Errorf("%w: raw mask has %d bytes, %dx%d needs %d", ErrData, heap, m.Width, m.Height, n)
		}
	case MaskLZ4:
		if n > maxLZ4Ratio*uint64(heap) {
			return 0, fmt.Errorf("%w: LZ4 mask of %dx%d (%d bytes) cannot come from %d bytes", ErrData, m.Width, m.Height, n, heap)
		}
	default:
		return 0, fmt.Errorf("%w: unknown mask encoding %d", ErrData, m.Encoding)
	}
	if n > math.MaxInt {
		return 0, fmt.Errorf("%w: mask of %dx%d", ErrData, m.Width, m.Height)
	}
	return int(n), nil
}

// DecodeMask writes the (H, W) pixels of a stored mask into out
// (H·W·itemsize bytes: the size Pixels gives).
func DecodeMask(m MaskMeta, heap, out []byte) error {
	switch m.Encoding {
	case MaskRaw:
		if len(heap) != len(out) {
			return fmt.Errorf("%w: raw mask has %d bytes, %dx%d needs %d", ErrData, len(heap), m.Width, m.Height, len(out))
		}
		copy(out, heap)
	case MaskLZ4:
		n, err := lz4.UncompressBlock(heap, out)
		if err != nil || n != len(out) {
			return fmt.Errorf("%w: LZ4 mask of %dx%d: %d bytes decoded (%v)", ErrData, m.Width, m.Height, n, err)
		}
	default:
		return fmt.Errorf("%w: unknown mask encoding %d", ErrData, m.Encoding)
	}
	return nil
}

// ImageGeometry is what a following field needs from the image it follows:
// the source size handed to the writer and the size stored (after
// max_resolution).
type ImageGeometry struct {
	SrcW, SrcH int
	W, H       int
}

// Follower is an Encoder of values laid on another field's image: the
// writer encodes that field first and passes its geometry.
type Follower interface {
	Follows() string
	EncodeFollowing(v Value, sample uint64, img ImageGeometry) (Encoded, error)
}

// NewTargetEncoder returns the encoder of a Ragged or Mask field.
func NewTargetEncoder(d Desc) (Encoder, error) {
	if d.Target == nil {
		d.Target = &TargetArgs{DType: d.DType, RowShape: d.Shape}
	}
	if err := d.checkTarget(); err != nil {
		return nil, err
	}
	item, _ := d.ItemSize()
	if d.Type == Mask {
		return &maskEncoder{name: d.Name, follows: d.Target.Follows, item: item}, nil
	}
	row, err := d.RowBytes()
	if err != nil {
		return nil, err
	}
	return &raggedEncoder{name: d.Name, args: *d.Target, row: row, item: item}, nil
}

type raggedEncoder struct {
	name string
	args TargetArgs
	row  uint64
	item int
}

// Follows is the image whose sizes the coordinates need; rows without
// coordinates (labels naming their boxes field) need none.
func (e *raggedEncoder) Follows() string {
	if e.args.Coords == "" {
		return ""
	}
	return e.args.Follows
}

func (e *raggedEncoder) Encode(v Value, sample uint64) (Encoded, error) {
	if e.args.Coords != "" {
		return Encoded{}, fmt.Errorf("field %q: coordinates need the image they follow", e.name)
	}
	return e.encode(v.Data, nil)
}

func (e *raggedEncoder) EncodeFollowing(v Value, _ uint64, img ImageGeometry) (Encoded, error) {
	return e.encode(v.Data, &img)
}

func (e *raggedEncoder) encode(data []byte, img *ImageGeometry) (Encoded, error) {
	if uint64(len(data))%e.row != 0 {
		return Encoded{}, fmt.Errorf("%w: %d bytes are not a whole number of %d-byte rows", ErrData, len(data), e.row)
	}
	rows := uint64(len(data)) / e.row
	if e.args.Coords != "" && img != nil {
		data = append([]byte(nil), data...)
		if err := e.scale(data, *img); err != nil {
			return Encoded{}, err
		}
	}
	col := make([]byte, RaggedColumnSize)
	binary.LittleEndian.PutUint64(col[8:], rows)
	return Encoded{Column: col, Heap: data, HasHeap: true}, nil
}

// scale checks every coordinate against the source image and maps it to
// the stored image (the writer's max_resolution).
func (e *raggedEncoder) scale(data []byte, img ImageGeometry) error {
	sx := float64(img.W) / float64(img.SrcW)
	sy := float64(img.H) / float64(img.SrcH)
	get := func(i int) float64 {
		if e.item == 4 {
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
	}
	set := func(i int, x float64) {
		if e.item == 4 {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(x)))
		} else {
			binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(x))
		}
	}
	n := len(data) / e.item
	last := 4
	if e.args.Coords != "xyxy" {
		last = int(e.args.RowShape[len(e.args.RowShape)-1])
	}
	const eps = 1e-3
	for i := 0; i < n; i += last {
		if e.args.Coords == "xyxy" {
			x0, y0, x1, y1 := get(i), get(i+1), get(i+2), get(i+3)
			if !(x0 >= -eps && y0 >= -eps && x1 <= float64(img.SrcW)+eps && y1 <= float64(img.SrcH)+eps && x0 <= x1 && y0 <= y1) {
				return fmt.Errorf("%w: box %d (%g, %g, %g, %g) is not an x0 <= x1, y0 <= y1 box inside its %dx%d image",
					ErrData, i/4, x0, y0, x1, y1, img.SrcW, img.SrcH)
			}
			set(i, x0*sx)
			set(i+1, y0*sy)
			set(i+2, x1*sx)
			set(i+3, y1*sy)
			continue
		}
		x, y := get(i), get(i+1)
		if math.IsNaN(x) || math.IsNaN(y) || x < -eps || y < -eps || x > float64(img.SrcW)+eps || y > float64(img.SrcH)+eps {
			return fmt.Errorf("%w: point %d (%g, %g) lies outside its %dx%d image", ErrData, i/last, x, y, img.SrcW, img.SrcH)
		}
		set(i, x*sx)
		set(i+1, y*sy)
	}
	return nil
}

type maskEncoder struct {
	name, follows string
	item          int
}

func (e *maskEncoder) Follows() string { return e.follows }

func (e *maskEncoder) Encode(Value, uint64) (Encoded, error) {
	return Encoded{}, fmt.Errorf("field %q: a mask is written with the image it follows", e.name)
}

// EncodeFollowing checks the mask against its image's source size, resizes
// it nearest-neighbour to the image's stored size and compresses it.
func (e *maskEncoder) EncodeFollowing(v Value, _ uint64, img ImageGeometry) (Encoded, error) {
	if v.Width != img.SrcW || v.Height != img.SrcH {
		return Encoded{}, fmt.Errorf("%w: mask is %dx%d, its image %q is %dx%d", ErrData, v.Width, v.Height, e.follows, img.SrcW, img.SrcH)
	}
	if len(v.Data) != v.Width*v.Height*e.item {
		return Encoded{}, fmt.Errorf("%w: mask has %d bytes, %dx%d needs %d", ErrData, len(v.Data), v.Width, v.Height, v.Width*v.Height*e.item)
	}
	pix := v.Data
	if img.W != img.SrcW || img.H != img.SrcH {
		pix = make([]byte, img.W*img.H*e.item)
		ResizeNearest(pix, img.W, img.H, v.Data, v.Width, v.Height, e.item)
	}
	col := make([]byte, MaskColumnSize)
	binary.LittleEndian.PutUint32(col[16:], uint32(img.W))
	binary.LittleEndian.PutUint32(col[20:], uint32(img.H))
	heap := pix
	buf := make([]byte, lz4.CompressBlockBound(len(pix)))
	var c lz4.Compressor
	if n, err := c.CompressBlock(pix, buf); err == nil && n > 0 && n < len(pix) {
		heap, col[24] = buf[:n], MaskLZ4
	}
	binary.LittleEndian.PutUint64(col[8:], uint64(len(heap)))
	return Encoded{Column: col, Heap: heap, HasHeap: true}, nil
}

// ResizeNearest resizes an sw×sh map of item-byte pixels to dw×dh: each
// output pixel takes the source pixel under its centre.
func ResizeNearest(dst []byte, dw, dh int, src []byte, sw, sh, item int) {
	xs := make([]int, dw)
	for x := range xs {
		xs[x] = min(int((float64(x)+0.5)*float64(sw)/float64(dw)), sw-1) * item
	}
	for y := 0; y < dh; y++ {
		sy := min(int((float64(y)+0.5)*float64(sh)/float64(dh)), sh-1)
		srow := src[sy*sw*item : (sy+1)*sw*item]
		drow := dst[y*dw*item : (y+1)*dw*item]
		if item == 1 {
			for x, sx := range xs {
				drow[x] = srow[sx]
			}
			continue
		}
		for x, sx := range xs {
			copy(drow[x*item:(x+1)*item], srow[sx:sx+item])
		}
	}
}
