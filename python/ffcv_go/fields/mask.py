"""MaskField: a lossless (H, W) class or instance map per sample, at its
image's stored size, and its decoder, which follows the image's geometry."""
import io
import os

import numpy as np

from .base import Field, _set_data, _Decoder
from .ragged import _parse_target_args, _target_args
from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.operation import _check_spec
from ..pipeline.state import State


class MaskField(Field):
    """An (H, W) uint8 or uint16 label map per sample, the size of the image
    in field ``follows`` as handed to the writer. It is stored at that
    image's stored size (the image's max_resolution, resized
    nearest-neighbour) and compressed losslessly (LZ4). A value is an
    integer array, a PIL image, or a label map file (a PNG: a palette PNG's
    indices are the labels) as bytes or a path (str or os.PathLike). FFCV
    cannot read files with this field (type id 101)."""
    TYPE_ID = 101

    def __init__(self, follows, dtype=np.uint8):
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype("u1"), np.dtype("<u2")):
            raise TypeError(f"MaskField: dtype {self.dtype} must be uint8 or uint16")
        if not follows or not isinstance(follows, str):
            raise ValueError("MaskField: follows must name the image field the mask belongs to")
        self.follows = follows

    @property
    def metadata_type(self):
        return np.dtype([("ptr", "<u8"), ("size", "<u8"), ("width", "<u4"), ("height", "<u4"),
                         ("encoding", "u1"), ("_pad", "u1", 7)], align=True)

    @staticmethod
    def from_binary(binary):
        a = _parse_target_args(binary)
        return MaskField(a.get("follows"), np.dtype(a["dtype"]))

    def to_binary(self):
        return _target_args({"dtype": self.dtype.str, "follows": self.follows, "encoding": "lz4"})

    def get_decoder_class(self):
        return MaskDecoder

    def _spec(self):
        return {"dtype": self.dtype.str, "follows": self.follows, "encoding": "lz4"}

    def _check_follows(self, name, fields):
        if type(fields.get(self.follows)).__name__ != "RGBImageField":
            raise ValueError(f"field {name!r} follows {self.follows!r}, which is not an RGBImageField of this writer")

    def _portable(self, value):
        return _pixels(value, self.dtype) if not isinstance(value, np.ndarray) else value

    def _value(self, value, v, keep):
        value = _pixels(value, self.dtype)
        if value.ndim != 2:
            raise ValueError(f"MaskField needs an (H, W) array, got shape {value.shape}")
        if value.dtype != self.dtype:
            value = self._exact(value)
        v.height, v.width = value.shape
        _set_data(v, value, keep)


    def _exact(self, value):
        """An integer map in this field's dtype, refused where a value would wrap."""
        if value.dtype.kind not in "biu":
            raise TypeError(f"MaskField of {self.dtype} got an array of {value.dtype} (an integer map is needed)")
        top = np.iinfo(self.dtype).max
        if value.size and (value.min() < 0 or value.max() > top):
            raise ValueError(f"MaskField of {self.dtype} got values from {value.min()} to {value.max()}, "
                             f"outside 0..{top}: use MaskField(dtype=np.uint16)" if top < 65535 else
                             f"MaskField of {self.dtype} got values from {value.min()} to {value.max()}, outside 0..{top}")
        return value.astype(self.dtype)


def _pixels(value, dtype):
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        return value.detach().cpu().numpy()
    try:
        from PIL import Image
    except ImportError:
        Image = None
    if isinstance(value, (str, os.PathLike, bytes, bytearray, memoryview)):
        # A label map file (a PNG; a palette PNG's indices are the labels).
        if Image is None:
            raise ImportError("MaskField reads label map files with Pillow: pip install pillow")
        src = io.BytesIO(value) if isinstance(value, (bytes, bytearray, memoryview)) else os.fspath(value)
        what = src if isinstance(src, str) else "given as bytes"
        try:
            with Image.open(src) as im:
                im.load()
                if im.mode not in ("L", "P", "I;16", "I"):
                    raise ValueError(f"MaskField: the label map {what} is a {im.mode} image; a label map has one "
                                     "channel (modes L, P, I;16)")
                value = np.asarray(im)
        except OSError as e:
            raise ValueError(f"MaskField: cannot read the label map {what}: {e}") from None
        return value
    if Image is not None and isinstance(value, Image.Image):
        arr = np.asarray(value)
        return arr.astype(dtype) if arr.dtype != dtype and arr.max(initial=0) <= np.iinfo(dtype).max else arr
    raise TypeError(f"MaskField takes a numpy array, a PIL image, or a label map file's bytes or path "
                    f"(str or os.PathLike), got {type(value).__name__}")


class MaskDecoder(_Decoder):
    """MaskField → (B, H, W) of its dtype at the size of the image output it
    follows (default: the field's own ``follows``): the same crop, flips,
    shifts and warps (rotations, shears, perspective) as the image,
    nearest-neighbour (each output pixel takes the stored pixel under its
    centre, mapped back); ``fill`` where the output shows no image
    (translation padding, a warp's border).

    ``instances`` names a boxes output when the field is an instance map
    (pixel value k + 1 under the object of box row k, 0 background): the
    ids are renumbered to the boxes that output keeps, j + 1 under kept box
    j and 0 where a box was dropped, so
    ``to_torchvision_targets(..., instance_masks=)`` pairs each box with its
    own pixels."""
    _go_name = "mask"

    def __init__(self, follows="auto", fill=0, instances=None):
        super().__init__()
        self.follows = follows
        self.fill = int(fill)
        _check_spec(self, self._go_spec())
        if instances is not None and not isinstance(instances, str):
            raise TypeError(f"MaskDecoder: instances names a boxes output, got {instances!r}")
        self.instances = instances
        self._shape = None  # the followed output's (H, W), set by the loader

    def _field_classes(self):
        return (MaskField,)

    def declare_state_and_memory(self, previous_state):
        shape = self._shape or (0, 0)
        return (State(previous_state.jit_mode, previous_state.device, shape, self.field.dtype),
                AllocationQuery(shape, self.field.dtype))

    def _go_spec(self, previous_state=None):
        return {"op": "mask", "fill": self.fill}

    def generate_code(self):
        raise NotImplementedError("MaskDecoder runs in the Go core only")
