"""RGBImageField and its decoders (FFCV's ffcv.fields.rgb_image)."""
import os

import numpy as np

from .base import Field, ARG_TYPE, _set_data
from ..pipeline.allocation_query import AllocationQuery
from ..pipeline.operation import Operation, _check_spec, _seed_arg
from ..pipeline.state import State

IMAGE_MODES = {"jpg": 0, "raw": 1}


def encode_jpeg(numpy_image, quality):
    """The JPEG file (a flat uint8 array) of an (H, W, 3) uint8 RGB image, as
    FFCV's helper; compressed by the Go writer's encoder (libjpeg-turbo)."""
    from .. import _lib
    img = np.ascontiguousarray(numpy_image)
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"encode_jpeg needs an (H, W, 3) uint8 image, got {img.dtype} {img.shape}")
    return np.frombuffer(_lib.encode_jpeg(img, img.shape[0], img.shape[1], int(quality)), dtype=np.uint8)


def resizer(image, target_resolution):
    """image downscaled (area interpolation) so its longer side is at most
    target_resolution, as FFCV's helper; None or a larger target: unchanged."""
    if target_resolution is None:
        return image
    original = np.array([image.shape[1], image.shape[0]])
    ratio = target_resolution / original.max()
    if ratio >= 1:
        return image
    from ..libffcv import resize_crop
    w, h = (ratio * original).astype(int)
    src = np.ascontiguousarray(image)
    out = np.empty((h, w, 3), dtype=np.uint8)
    resize_crop(src, 0, src.shape[0], 0, src.shape[1], out)
    return out


class RGBImageField(Field):
    """An RGB image per sample, stored raw or as JPEG.

    write_mode: 'raw', 'jpg', 'smart' (JPEG when H*W*3 > smart_threshold) or
    'proportion' (JPEG with probability compress_probability). max_resolution
    downscales (area) so the longer side fits. Accepts PIL images, uint8
    arrays (H, W), (H, W, 1), (H, W, 3) or (H, W, 4) (grayscale becomes RGB),
    image files as bytes (JPEG, PNG, ...), and paths (str or os.PathLike) of
    image files, which the Go encoder reads and decodes in its own threads.

    keep_source_jpeg (not in FFCV, off by default): a JPEG file given as
    bytes or by path that needs no resize and is to be stored as JPEG is
    stored byte for byte after checking that it decodes cleanly, instead of
    being decoded and re-encoded. Writing then costs one decode per image.
    keep_source_jpeg="coefficients" keeps what decides its pixels: with
    restart_markers, a 4:2:0 YCbCr JPEG (baseline or progressive) is stored
    as its own coefficients and quantization tables in one scan with
    restart markers (a baseline scan's Huffman coding is kept, markers
    spliced in), its metadata segments (EXIF, ICC, comments) dropped: the
    same pixels as the file, and crops decode faster. Any other JPEG, or
    any with restart_markers=False, is kept byte for byte.

    jpeg_transcode (not in FFCV, on by default): such a JPEG file that is not
    kept is re-encoded at jpeg_quality in the DCT domain (its coefficients
    requantized to the quality's tables, never finer than the source's)
    instead of from decoded pixels as FFCV does: about twice as fast, and
    closer to the source. JPEGs other than 4:2:0 YCbCr, resized images and
    pixel inputs are always re-encoded from pixels; jpeg_transcode=False
    re-encodes every image from pixels.

    restart_markers (not in FFCV, on by default): every JPEG the writer makes
    has restart markers lined up with its rows of 16-pixel blocks, so that a
    random crop entropy-decodes only the part of the scan under it (the same
    pixels, less CPU per image at load time; FFCV reads such files too). A
    source already at jpeg_quality or coarser would keep its own scan, which
    usually has no markers: they are spliced into it (its coefficients and
    Huffman tables unchanged). restart_markers=False keeps such scans as they
    are, which writes those sources a little faster and decodes their crops
    slower.
    """
    TYPE_ID = 2

    def __init__(self, write_mode="raw", max_resolution=None, smart_threshold=None,
                 jpeg_quality=90, compress_probability=0.5, keep_source_jpeg=False,
                 jpeg_transcode=True, restart_markers=True):
        if write_mode not in ("raw", "jpg", "smart", "proportion"):
            raise ValueError(f"RGBImageField: write_mode {write_mode!r} must be 'raw', 'jpg', 'smart' or 'proportion'")
        if max_resolution is not None and int(max_resolution) < 1:
            raise ValueError(f"RGBImageField: max_resolution {max_resolution} must be positive")
        if not 1 <= int(jpeg_quality) <= 100:
            raise ValueError(f"RGBImageField: jpeg_quality {jpeg_quality} must be in [1, 100]")
        # FFCV reads compress_probability only in 'proportion' mode, so None
        # (ffcv-imagenet's default) is fine elsewhere.
        if compress_probability is None:
            if write_mode == "proportion":
                raise ValueError("RGBImageField: write_mode 'proportion' needs a compress_probability in [0, 1]")
        elif not 0 <= float(compress_probability) <= 1:
            raise ValueError(f"RGBImageField: compress_probability {compress_probability} must be in [0, 1]")
        self.write_mode = write_mode
        self.max_resolution = max_resolution
        self.smart_threshold = smart_threshold
        self.jpeg_quality = int(jpeg_quality)
        self.proportion = None if compress_probability is None else float(compress_probability)
        if keep_source_jpeg not in (False, True, "coefficients"):
            raise ValueError(f"RGBImageField: keep_source_jpeg {keep_source_jpeg!r} must be False, True or "
                             "'coefficients'")
        self.keep_source_jpeg = keep_source_jpeg if keep_source_jpeg == "coefficients" else bool(keep_source_jpeg)
        self.jpeg_transcode = bool(jpeg_transcode)
        self.restart_markers = bool(restart_markers)

    @property
    def metadata_type(self):
        return np.dtype([("mode", "<u1"), ("width", "<u2"), ("height", "<u2"), ("data_ptr", "<u8")])

    @staticmethod
    def from_binary(binary):
        return RGBImageField()

    def to_binary(self):
        return np.zeros(1, dtype=ARG_TYPE)[0]

    def get_decoder_class(self):
        return SimpleRGBImageDecoder

    def encode(self, destination, field, malloc):
        raise NotImplementedError("RGBImageField is encoded by the Go writer only: a subclass that overrides "
                                  "encode() cannot call RGBImageField.encode")

    def _spec(self):
        return {"write_mode": self.write_mode, "max_resolution": int(self.max_resolution or 0),
                "smart_threshold": int(self.smart_threshold or 0), "jpeg_quality": self.jpeg_quality,
                "compress_probability": self.proportion or 0.0, "keep_source_jpeg": self.keep_source_jpeg is True,
                "keep_coefficients": self.keep_source_jpeg == "coefficients", "jpeg_transcode": self.jpeg_transcode, "restart_markers": self.restart_markers}

    def _portable(self, value):
        pix = _pil_pixels(value)
        return value if pix is None else pix

    def _value(self, value, v, keep):
        if isinstance(value, (str, os.PathLike)):
            v.encoded = 2  # a file the Go encoder reads itself
            _set_data(v, os.fsencode(value), keep)
            return
        if isinstance(value, (bytes, bytearray, memoryview)):
            v.encoded = 1  # an image file
            _set_data(v, value, keep)
            return
        if not isinstance(value, np.ndarray):
            pix = _pil_pixels(value)
            if pix is None:
                raise TypeError(f"RGBImageField takes a PIL image, a uint8 array, an image file's bytes or its "
                                f"path (str or os.PathLike), got {type(value).__name__}")
            value = pix
        if value.dtype != np.uint8:
            raise TypeError(f"RGBImageField needs uint8 pixels, got {value.dtype}")
        if value.ndim == 2:
            value = value[:, :, None]
        if value.ndim != 3 or value.shape[2] not in (1, 3, 4):
            raise ValueError(f"RGBImageField needs an (H, W, 3) image, got shape {value.shape}")
        v.height, v.width, v.channels = value.shape
        _set_data(v, value, keep)


def _pil_pixels(value):
    """The pixels of a PIL image as an (H, W[, C]) uint8 array (other modes
    than RGB, L and RGBA converted to RGB); None when value is not one."""
    try:
        from PIL import Image
    except ImportError:
        return None
    if not isinstance(value, Image.Image):
        return None
    if value.mode not in ("RGB", "L", "RGBA"):
        value = value.convert("RGB")
    return np.asarray(value)


from ..transforms.utils import fast_crop  # noqa: E402
from ..transforms.utils.fast_crop import get_random_crop  # noqa: E402,F401  (FFCV's module path)


def get_center_crop(height, width, _, ratio):
    """The crop generator of CenterCropRGBImageDecoder, with FFCV's signature
    for crop generators (the scale argument is unused): fast_crop's centred
    square."""
    return fast_crop.get_center_crop(height, width, ratio)


class _ImageDecoder(Operation):
    _builtin = _decoder = True

    def accept_field(self, field):
        if getattr(field, "_clips", False):  # a VideoField: its frames go through a clip decoder
            name = type(self).__name__
            raise TypeError(f"{name} decodes images, not the clips of a {type(field).__name__}: start the "
                            f"pipeline with RandomClipDecoder(num_frames, geometry={name}(...)) or "
                            f"ClipDecoder(num_frames, geometry={name}(...))")
        super().accept_field(field)

    def generate_code(self):
        raise NotImplementedError(f"{type(self).__name__} runs in the Go core only")


class SimpleRGBImageDecoder(_ImageDecoder):
    """Decodes whole images; all images must have the same size (else TypeError)."""

    def declare_state_and_memory(self, previous_state):
        widths, heights = self.metadata["width"], self.metadata["height"]
        if len(widths) and (widths.min() != widths.max() or heights.min() != heights.max()):
            raise TypeError("SimpleRGBImageDecoder needs images of one size; "
                            "use RandomResizedCropRGBImageDecoder or CenterCropRGBImageDecoder")
        shape = (int(heights[0]), int(widths[0]), 3) if len(widths) else (0, 0, 3)
        return (State(previous_state.jit_mode, previous_state.device, shape, np.dtype("u1")),
                AllocationQuery(shape, np.dtype("u1")))

    def _go_spec(self, previous_state=None):
        return {"op": "rgb_simple"}

    def generate_code(self):
        """FFCV's protocol, for code that drives the decoder by hand
        (accept_globals, then Compiler.compile(generate_code())): decodes with
        the Go library through ffcv_go.libffcv. The Loader runs rgb_simple in
        Go instead."""
        from ..libffcv import imdecode, memcpy
        from ..pipeline.compiler import Compiler
        mem_read = self.memory_read
        if mem_read is None:
            raise ValueError("SimpleRGBImageDecoder.generate_code needs accept_globals(metadata, memory_read) first")
        imdecode_c = Compiler.compile(imdecode)
        memcpy_c = Compiler.compile(memcpy)
        my_range = Compiler.get_iterator()
        jpg = IMAGE_MODES["jpg"]

        def decode(batch_indices, destination, metadata, storage_state):
            for dst_ix in my_range(len(batch_indices)):
                field = metadata[batch_indices[dst_ix]]
                image_data = mem_read(field["data_ptr"], storage_state)
                height, width = field["height"], field["width"]
                if field["mode"] == jpg:
                    imdecode_c(image_data, destination[dst_ix], height, width, height, width, 0, 0, 1, 1,
                               False, False)
                else:
                    memcpy_c(image_data, destination[dst_ix])
            return destination[:len(batch_indices)]

        decode.is_parallel = True
        return decode


class ResizedCropRGBImageDecoder(_ImageDecoder):
    """A crop of each image, area-resized to output_size (FFCV's base of the
    RRC and centre-crop decoders). The built-in subclasses crop in Go. A
    subclass giving its own ``get_crop_generator`` (a function
    (height, width, scale, ratio) -> (row, col, h, w)) is decoded in Python
    by ``generate_code``, with the Go library's JPEG decoder and resizer."""

    def __init__(self, output_size):
        super().__init__()
        if len(output_size) != 2:
            raise ValueError(f"{type(self).__name__}: output_size {output_size} must be (height, width)")
        self.output_size = (int(output_size[0]), int(output_size[1]))

    @property
    def get_crop_generator(self):
        raise NotImplementedError(f"{type(self).__name__} gives no get_crop_generator")

    def _own_crop(self):
        """Whether a subclass replaced the crop of the built-in decoder it extends."""
        builtin = next(c for c in type(self).__mro__ if c.__module__ == __name__)
        return type(self).get_crop_generator is not builtin.get_crop_generator

    def declare_state_and_memory(self, previous_state):
        shape = (*self.output_size, 3)
        state = State(previous_state.jit_mode, previous_state.device, shape, np.dtype("u1"))
        if self._go_spec() is not None:
            return state, AllocationQuery(shape, np.dtype("u1"))
        # Decoded in Python: room for the largest whole image too, as FFCV.
        most = int(self.metadata["width"].max()) * int(self.metadata["height"].max()) * 3 \
            if len(self.metadata) else 0
        return state, (AllocationQuery(shape, np.dtype("u1")), AllocationQuery((most,), np.dtype("u1")))

    def generate_code(self):
        from ..libffcv import imdecode, resize_crop
        from ..pipeline.compiler import Compiler
        mem_read = self.memory_read
        if mem_read is None:
            raise ValueError(f"{type(self).__name__}.generate_code needs accept_globals(metadata, memory_read) first")
        imdecode_c, resize_crop_c = Compiler.compile(imdecode), Compiler.compile(resize_crop)
        get_crop_c = Compiler.compile(self.get_crop_generator)
        my_range = Compiler.get_iterator()
        jpg = IMAGE_MODES["jpg"]
        # The generator gets (height, width, scale, ratio) as FFCV passes them:
        # tuples as arrays, a centre crop's scale None and ratio a float.
        scale, ratio = getattr(self, "scale", None), getattr(self, "ratio", None)
        scale = np.array(scale) if isinstance(scale, tuple) else scale
        ratio = np.array(ratio) if isinstance(ratio, tuple) else ratio

        def decode(batch_indices, my_storage, metadata, storage_state):
            destination, temp_storage = my_storage
            for dst_ix in my_range(len(batch_indices)):
                field = metadata[batch_indices[dst_ix]]
                image_data = mem_read(field["data_ptr"], storage_state)
                height, width = np.uint32(field["height"]), np.uint32(field["width"])
                if field["mode"] == jpg:
                    whole = temp_storage[dst_ix][:3 * height * width].reshape(height, width, 3)
                    imdecode_c(image_data, whole, height, width, height, width, 0, 0, 1, 1, False, False)
                else:
                    whole = image_data.reshape(height, width, 3)
                i, j, h, w = get_crop_c(height, width, scale, ratio)
                resize_crop_c(whole, i, i + h, j, j + w, destination[dst_ix])
            return destination[:len(batch_indices)]

        decode.is_parallel = True
        return decode


_ResizedCropDecoder = ResizedCropRGBImageDecoder


class RandomResizedCropRGBImageDecoder(_ResizedCropDecoder):
    """Random crop (torchvision's sampling, 10 tries then centre) resized to
    output_size; seed pairs it with a LabelRandomResizedCrop. second_seed
    (with seed; FFCV-SSL's non-overlapping crops): the crop is drawn beside
    the crop a decoder given seed=second_seed takes, never overlapping it
    (see the views guide)."""

    def __init__(self, output_size, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3), seed=None, second_seed=None):
        super().__init__(output_size)
        self.scale, self.ratio = (float(scale[0]), float(scale[1])), (float(ratio[0]), float(ratio[1]))
        self.seed, self.second_seed = _seed_arg(seed), _seed_arg(second_seed)
        _check_spec(self, self._spec())

    def _spec(self):
        spec = {"op": "rgb_rrc", "size": list(self.output_size), "scale": list(self.scale), "ratio": list(self.ratio)}
        if self.seed is not None:
            spec["seed"] = self.seed
        if self.second_seed is not None:
            spec["second_seed"] = self.second_seed
        return spec

    def _go_spec(self, previous_state=None):
        return None if self._own_crop() else self._spec()


class CenterCropRGBImageDecoder(_ResizedCropDecoder):
    """Centre square of side ratio*min(H, W), resized to output_size."""

    def __init__(self, output_size, ratio=224 / 256):
        super().__init__(output_size)
        self.ratio = float(ratio)
        _check_spec(self, self._spec())

    def _spec(self):
        return {"op": "rgb_center", "size": list(self.output_size), "ratio": self.ratio}

    def _go_spec(self, previous_state=None):
        return None if self._own_crop() else self._spec()


class _CornerCropRGBImageDecoder(CenterCropRGBImageDecoder):
    """CornerCrop as a decoder: the square of side ratio*min(H, W) at a
    corner, resized to output_size (only the square is decoded, at a
    reduced DCT scale where the output is smaller)."""

    def __init__(self, output_size, ratio, corner):
        self.corner = str(corner)
        super().__init__(output_size, ratio)

    def _spec(self):
        return dict(super()._spec(), op="rgb_corner", corner=self.corner)


class PadRGBImageDecoder(_ImageDecoder):
    """FFCV-SSL's PadRGBImageDecoder: every image whole, at the top-left of
    an output the size of the file's largest image (its largest height by
    its largest width), the rest zeros. Targets that follow it keep their
    coordinates."""

    def declare_state_and_memory(self, previous_state):
        widths, heights = self.metadata["width"], self.metadata["height"]
        shape = (int(heights.max()), int(widths.max()), 3) if len(widths) else (0, 0, 3)
        return (State(previous_state.jit_mode, previous_state.device, shape, np.dtype("u1")),
                AllocationQuery(shape, np.dtype("u1")))

    def _go_spec(self, previous_state=None):
        return {"op": "rgb_pad"}


class ResizePadRGBImageDecoder(_ImageDecoder):
    """Detection's resize (not in FFCV): each whole image resized, aspect
    kept, to fit output_size (rows, cols), times a factor drawn from scale
    (scale jitter, at most 1), at the top-left corner, the rest filled with
    fill — as torchvision's detection models batch images. Nothing is
    cropped; targets that follow it are scaled the same way."""

    def __init__(self, output_size, scale=(1.0, 1.0), fill=(0, 0, 0), seed=None):
        super().__init__()
        self.seed = _seed_arg(seed)
        self.output_size = (int(output_size[0]), int(output_size[1]))
        self.scale = (float(scale[0]), float(scale[1]))
        self.fill = tuple(int(x) for x in fill)
        _check_spec(self, self._go_spec())

    def declare_state_and_memory(self, previous_state):
        shape = (*self.output_size, 3)
        return (State(previous_state.jit_mode, previous_state.device, shape, np.dtype("u1")),
                AllocationQuery(shape, np.dtype("u1")))

    def _go_spec(self, previous_state=None):
        spec = {"op": "rgb_resize_pad", "size": list(self.output_size), "scale": list(self.scale),
                "fill": list(self.fill)}
        if self.seed is not None:
            spec["seed"] = self.seed
        return spec


class MosaicRGBImageDecoder(_ImageDecoder):
    """YOLO's Mosaic (Ultralytics' ``Mosaic(dataset, imgsz, p, n)``) as a
    decoder: the sample's image and ``n - 1`` partners (n = 4 or 9), each
    resized so its longer side is imgsz, laid as Ultralytics lays them on a
    ``(2 * imgsz, 2 * imgsz, 3)`` uint8 square filled with fill: 4 tiles
    around a random centre in [imgsz/2, 3 * imgsz/2), 9 around the sample's
    own. Follow it with a RandomPerspective of border -imgsz/2, which crops
    back to imgsz. Partners are drawn uniformly from the whole file with the
    sample's randomness key, so batches are the same for any number of
    workers. Where the mosaic does not apply (probability 1 - p, or from
    epoch close_epoch on: Ultralytics' close_mosaic is ``close_epoch =
    epochs - close_mosaic``), the sample alone is letterboxed into the
    middle imgsz square. Boxes, labels and keypoints decoded with
    RaggedDecoder follow every tile from its own sample; MaskDecoder refuses
    it. seed pairs it with a LabelMosaic."""

    def __init__(self, imgsz=640, n=4, p=1.0, close_epoch=None, fill=(114, 114, 114), seed=None):
        super().__init__()
        self.imgsz, self.n, self.p = int(imgsz), int(n), float(p)
        self.close_epoch = None if close_epoch is None else int(close_epoch)
        self.fill = tuple(int(x) for x in fill)
        self.seed = _seed_arg(seed)
        _check_spec(self, self._spec())

    _shape = property(lambda self: (2 * self.imgsz, 2 * self.imgsz, 3))
    _dtype = np.dtype("u1")

    def declare_state_and_memory(self, previous_state):
        return (State(previous_state.jit_mode, previous_state.device, self._shape, self._dtype),
                AllocationQuery(self._shape, self._dtype))

    def _spec(self):
        spec = {"op": "mosaic", "imgsz": self.imgsz, "n": self.n, "p": self.p, "fill": list(self.fill)}
        if self.close_epoch is not None:
            spec["close_epoch"] = self.close_epoch
        if self.seed is not None:
            spec["seed"] = self.seed
        return spec

    def _go_spec(self, previous_state=None):
        return self._spec()


class LabelMosaic(MosaicRGBImageDecoder):
    """A decoder of the image field that outputs, as int64 ``(n + 2,)``, what
    ``MosaicRGBImageDecoder`` with the same arguments and seed draws for
    each sample: (applied, xc, yc, partner 1, ..., partner n-1). applied is
    1 or 0; (xc, yc) is where the 4 tiles meet, in output pixels (-1 with 9
    tiles, which Ultralytics lays without a random centre, and where not
    applied); the partners are sample indices of the file (-1 where not
    applied). It reads only the images' metadata; give it a view of its own
    over the image field (``PipelineSpec("image", [LabelMosaic(...)])``)."""

    def __init__(self, imgsz=640, n=4, p=1.0, close_epoch=None, fill=(114, 114, 114), seed=None):
        if seed is None:
            raise ValueError("LabelMosaic: seed is missing: it must be the seed of the MosaicRGBImageDecoder "
                             "it reports on")
        super().__init__(imgsz, n, p, close_epoch, fill, seed)

    _shape = property(lambda self: (self.n + 2,))
    _dtype = np.dtype("<i8")

    def _spec(self):
        return dict(super()._spec(), op="label_mosaic")


def _letterbox_shape(new_shape):
    """YOLO's new_shape: an int (square) or (rows, cols)."""
    if np.isscalar(new_shape):
        return (int(new_shape), int(new_shape))
    return (int(new_shape[0]), int(new_shape[1]))


class LetterBoxRGBImageDecoder(_ImageDecoder):
    """YOLO's LetterBox as the decoder (``ffcv_go.transforms.LetterBox``
    first in a pipeline is this): each whole image resized, aspect kept, by
    r = min(rows / h, cols / w) (at most 1 with scaleup=False) with
    cv2.resize's INTER_LINEAR, to (round(w r), round(h r)), then padded to
    new_shape with fill, split as Ultralytics splits it (left =
    round(dw / 2 - 0.1), right = round(dw / 2 + 0.1); all of it right and
    below with center=False). scale_fill stretches to new_shape. auto=True
    (pad to a multiple of stride only) gives each image its own shape,
    which a batch cannot hold: it is refused. Targets that follow it are
    scaled and shifted with the pixels.

    rect=True gives Ultralytics' rect batches (its validation's
    rect=True), with the loader's ``order=OrderOption.RECT`` and the same
    batch_size: each batch of the aspect-sorted samples is letterboxed to
    its own shape (rows, cols), each side ceil(side / imgsz * imgsz /
    stride + pad) * stride as Ultralytics computes it, imgsz being
    new_shape (a square); the image's long side is first brought to imgsz
    at most, as Ultralytics' load_image does. The batch's images lie at the
    top-left of an output of side ceil(imgsz / stride + pad) * stride, the
    rest filled: the batch is ``images[:, :rows, :cols]``, its shape given
    per image by LabelLetterBox."""

    def __init__(self, new_shape=(640, 640), auto=False, scale_fill=False, scaleup=True, center=True, stride=32,
                 fill=114, rect=False, batch_size=None, pad=0.5):
        super().__init__()
        self.new_shape = _letterbox_shape(new_shape)
        self.auto, self.scale_fill = bool(auto), bool(scale_fill)
        self.scaleup, self.center = bool(scaleup), bool(center)
        self.stride = int(stride)
        self.fill = [int(fill)] if np.isscalar(fill) else [int(v) for v in fill]
        self.rect, self.pad = bool(rect), float(pad)
        self.batch_size = None if batch_size is None else int(batch_size)
        name = type(self).__name__
        if self.stride < 1:
            raise ValueError(f"{name}: stride {self.stride} must be positive")
        if self.rect and (self.batch_size is None or self.new_shape[0] != self.new_shape[1]):
            raise ValueError(f"{name}: rect=True needs the loader's batch_size and a square new_shape (imgsz)")
        _check_spec(self, self._go_spec())

    def _out_shape(self):
        if self.rect:
            side = int(np.ceil(self.new_shape[0] / self.stride + self.pad)) * self.stride
            return (side, side)
        return self.new_shape

    def declare_state_and_memory(self, previous_state):
        shape = (*self._out_shape(), 3)
        return (State(previous_state.jit_mode, previous_state.device, shape, np.dtype("u1")),
                AllocationQuery(shape, np.dtype("u1")))

    def _args(self):
        a = {"size": list(self.new_shape), "auto": self.auto, "scale_fill": self.scale_fill,
             "scaleup": self.scaleup, "center": self.center, "fill": self.fill}
        if self.rect:
            a["rect"] = {"batch_size": self.batch_size, "imgsz": self.new_shape[0], "stride": self.stride,
                         "pad": self.pad}
        return a

    def _go_spec(self, previous_state=None):
        return {"op": "rgb_letterbox", **self._args()}


class LabelLetterBox(LetterBoxRGBImageDecoder):
    """A decoder of the image field that outputs, as float32 (8,), what
    ``LetterBox`` with the same arguments does to each image: Ultralytics'
    ratio_pad -- (ratio_w, ratio_h, pad_left, pad_top) -- then the stored
    image's (width, height) and the shape (rows, cols) it is letterboxed to
    (new_shape; with rect=True its batch's). It reads only the images'
    metadata; give it a view of its own over the image field
    (custom_field_mapper)."""

    def declare_state_and_memory(self, previous_state):
        shape, dtype = (8,), np.dtype("<f4")
        return State(previous_state.jit_mode, previous_state.device, shape, dtype), AllocationQuery(shape, dtype)

    def _go_spec(self, previous_state=None):
        return {"op": "label_letterbox", **self._args()}


class RandomIoUCropRGBImageDecoder(_ImageDecoder):
    """torchvision.transforms.v2's RandomIoUCrop as the decoder
    (``ffcv_go.transforms.RandomIoUCrop`` is this), resized to output_size
    (rows, cols): SSD's crop, drawn around the sample's stored boxes (the
    file's field ``boxes``, a RaggedArrayField of xyxy boxes) -- a minimum
    IoU from sampler_options (1 keeps the whole image), then up to trials
    crops, each side a factor in [min_scale, max_scale] of the image's and
    the aspect in [min_aspect_ratio, max_aspect_ratio], until one holds a
    box's centre and has IoU >= the minimum with such a box. Boxes whose
    centre lies outside the crop are dropped from the targets that
    follow, as torchvision marks them for SanitizeBoundingBoxes."""

    def __init__(self, output_size, min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0,
                 sampler_options=None, trials=40, boxes="boxes", seed=None):
        super().__init__()
        self.output_size = _letterbox_shape(output_size)
        self.min_scale, self.max_scale = float(min_scale), float(max_scale)
        self.min_aspect_ratio, self.max_aspect_ratio = float(min_aspect_ratio), float(max_aspect_ratio)
        self.sampler_options = None if sampler_options is None else [float(o) for o in sampler_options]
        self.trials, self.boxes, self.seed = int(trials), str(boxes), _seed_arg(seed)
        _check_spec(self, self._go_spec())

    def declare_state_and_memory(self, previous_state):
        shape = (*self.output_size, 3)
        return (State(previous_state.jit_mode, previous_state.device, shape, np.dtype("u1")),
                AllocationQuery(shape, np.dtype("u1")))

    def _args(self):
        a = {"size": list(self.output_size), "boxes": self.boxes, "min_scale": self.min_scale,
             "max_scale": self.max_scale, "min_aspect_ratio": self.min_aspect_ratio,
             "max_aspect_ratio": self.max_aspect_ratio, "trials": self.trials}
        if self.sampler_options is not None:
            a["sampler_options"] = self.sampler_options
        if self.seed is not None:
            a["seed"] = self.seed
        return a

    def _go_spec(self, previous_state=None):
        return {"op": "rgb_iou_crop", **self._args()}


class LabelRandomIoUCrop(RandomIoUCropRGBImageDecoder):
    """A decoder of the image field that outputs, as float32 (4,), the crop
    (top, left, height, width) ``RandomIoUCrop`` with the same arguments
    and seed takes from each stored image (the whole image where it keeps
    it): torchvision's ``F.crop`` parameters. It needs the RandomIoUCrop's
    seed (its key is that seed's). Give it a view of its own over the image
    field (custom_field_mapper)."""

    def declare_state_and_memory(self, previous_state):
        shape, dtype = (4,), np.dtype("<f4")
        return State(previous_state.jit_mode, previous_state.device, shape, dtype), AllocationQuery(shape, dtype)

    def _go_spec(self, previous_state=None):
        return {"op": "label_iou_crop", **self._args()}
