"""Every built-in operation's arguments are checked once, in the Go core
(ffcv_op_check), when the operation is constructed: a bad one is a
ValueError that names the class the user wrote and the argument, as
"Class: argument value must ...". Python only coerces types and shapes."""
import inspect
import re

import numpy as np
import pytest

import ffcv_go.fields.decoders as D
import ffcv_go.transforms as T
from conftest import FIXTURES
from ffcv_go import _lib
from ffcv_go.pipeline.operation import Operation
from ffcv_go.transforms.auto_augment import AUGMENT_OPS

# (class, arguments, the argument the error must name). Each class of
# ffcv_go.transforms and ffcv_go.fields.decoders that takes arguments has
# its probabilities, thresholds, magnitudes, sizes, paddings and ranges here.
BAD = [
    (T.RandomHorizontalFlip, dict(flip_prob=1.5), "flip_prob"),
    (T.RandomVerticalFlip, dict(flip_prob=-0.1), "flip_prob"),
    (T.RandomTranslate, dict(padding=-2), "padding"),
    (T.RandomTranslate, dict(padding=4, fill=(0, 256, 0)), "fill"),
    (T.Cutout, dict(crop_size=0), "crop_size"),
    (T.Cutout, dict(crop_size=4, fill=(-1, 0, 0)), "fill"),
    (T.RandomBrightness, dict(magnitude=-0.2), "magnitude"),
    (T.RandomContrast, dict(magnitude=0.2, p=1.1), "p"),
    (T.RandomSaturation, dict(magnitude=0.2, p=-1), "p"),
    (T.RandomGrayscale, dict(gray_prob=2), "gray_prob"),
    (T.RandomSolarization, dict(solarization_prob=128), "solarization_prob"),
    (T.RandomSolarization, (0.2, 300), "threshold"),
    (T.RandomSolarization, (0.2, -1), "threshold"),
    (T.RandomCrop, dict(size=0), "size"),
    (T.RandomCrop, dict(size=8, padding=-1), "padding"),
    (T.NormalizeImage, dict(mean=[0, 0], std=[1], type=np.float32), "mean"),
    (T.NormalizeImage, dict(mean=[0], std=[0], type=np.float32), "std"),
    (T.NormalizeImage, dict(mean=[0], std=[1], type=np.float64), "type"),
    (T.Poison, dict(mask=np.zeros((2, 2, 3)), alpha=1.5, indices=[0]), "alpha"),
    (T.Poison, dict(mask=np.zeros((2, 2, 3)), alpha=np.full((2, 2), -1.0), indices=[0]), "alpha"),
    (T.Poison, dict(mask=np.zeros((2, 2, 3)), alpha=0.5, indices=[0], clamp=(255, 0)), "clamp"),
    (T.ImageMixup, dict(alpha=0, same_lambda=True), "alpha"),
    (T.LabelMixup, dict(alpha=-1, same_lambda=False), "alpha"),
    (T.RandomResizedCrop, dict(output_size=0), "output_size"),
    (T.RandomResizedCrop, dict(output_size=224, scale=(0.5, 0.1)), "scale"),
    (T.RandomResizedCrop, dict(output_size=224, ratio=(0, 1)), "ratio"),
    (T.RandomResizedCrop, dict(output_size=224, second_seed=3), "second_seed"),
    (T.RandomResizedCrop, dict(scale=(0, 1), ratio=(0.75, 1.33), size=224), "scale"),
    (T.RandomColorJitter, dict(jitter_prob=1.2), "jitter_prob"),
    (T.RandomColorJitter, dict(brightness=-0.5), "brightness"),
    (T.RandomColorJitter, dict(contrast=(1.5, 0.5)), "contrast"),
    (T.RandomColorJitter, dict(saturation=(-1, 1)), "saturation"),
    (T.RandomColorJitter, dict(hue=0.6), "hue"),
    (T.GaussianBlur, dict(blur_prob=1.5), "blur_prob"),
    (T.GaussianBlur, dict(blur_prob=0.5, kernel_size=4), "kernel_size"),
    (T.GaussianBlur, dict(blur_prob=0.5, sigma=(2, 1)), "sigma"),
    (T.GaussianBlur, dict(blur_prob=0.5, sigma=0), "sigma"),
    (T.RandomErasing, dict(erase_prob=-0.5), "erase_prob"),
    (T.Resample, dict(orig_freq=0, new_freq=16000), "orig_freq"),
    (T.Resample, dict(orig_freq=16000, new_freq=8000, rolloff=0), "rolloff"),
    (T.Gain, dict(min_db=6, max_db=-6), "min_db"),
    (T.SpeedPerturbation, dict(orig_freq=16000, factors=[]), "factors"),
    (T.MelSpectrogram, dict(n_fft=400, win_length=512), "win_length"),
    (T.MelSpectrogram, dict(hop_length=0), "hop_length"),
    (T.WhisperLogMel, dict(n_mels=64), "n_mels"),
    (T.AddNoise, dict(snr_db=(20, 10), noise="noise"), "snr_db"),
    (T.AddNoise, dict(snr_db=(0, 10), noise="noise", source=-1), "source"),
    (T.TimeMasking, dict(time_mask_param=-1), "time_mask_param"),
    (T.TimeMasking, dict(time_mask_param=10, p=2), "p"),
    (T.FrequencyMasking, dict(freq_mask_param=-3), "freq_mask_param"),
    (T.RandomErasing, dict(scale=(0.4, 1.5)), "scale"),
    (T.RandomErasing, dict(ratio=(3, 0.3)), "ratio"),
    (T.RandomErasing, dict(mean=[0, 300, 0]), "mean"),
    (T.Rotate, dict(rotate_prob=2), "rotate_prob"),
    (T.Rotate, dict(angle=-0.1), "angle"),
    (T.Rotate, dict(interpolation="bicubic"), "interpolation"),
    (T.CenterCrop, dict(output_size=0, ratio=0.5), "output_size"),
    (T.CenterCrop, dict(output_size=32, ratio=1.5), "ratio"),
    (T.CornerCrop, dict(output_size=32, ratio=0.5, corner="middle"), "corner"),
    (T.CornerCrop, dict(output_size=32, ratio=0), "ratio"),
    (T.LabelColorJitter, dict(jitter_prob=2, seed=1), "jitter_prob"),
    (T.LabelColorJitter, dict(hue=-0.1, seed=1), "hue"),
    (T.LabelColorJitter, dict(), "seed"),
    (T.LabelGrayscale, dict(gray_prob=1.5, seed=1), "gray_prob"),
    (T.LabelSolarization, dict(solarization_prob=128, seed=1), "solarization_prob"),
    (T.LabelSolarization, dict(threshold=256, seed=1), "threshold"),
    (T.LabelSolarization, dict(), "seed"),
    (T.LabelGaussianBlur, dict(blur_prob=0.5, kernel_size=2, seed=1), "kernel_size"),
    (T.LabelRotate, dict(rotate_prob=-1, seed=1), "rotate_prob"),
    (T.LabelTranslate, dict(padding=-1, seed=1), "padding"),
    (T.LabelTranslate, dict(padding=4), "seed"),
    (T.LabelRandomHorizontalFlip, dict(flip_prob=7, seed=1), "flip_prob"),
    (T.LabelRandomResizedCrop, dict(output_size=(8, 8), seed=1, scale=(0, 1), ratio=(1, 1)), "scale"),
    (T.LabelRandomResizedCrop, dict(output_size=(8, 8), seed=None, scale=(0.5, 1), ratio=(1, 1)), "seed"),
    (T.LabelRandomResizedCrop, dict(output_size=(8, 8), seed=None, scale=(0.5, 1), ratio=(1, 1), second_seed=2),
     "second_seed"),
    (T.RandAugment, dict(magnitude=31), "magnitude"),
    (T.RandAugment, dict(num_ops=-1), "num_ops"),
    (T.RandAugment, dict(fill=[0, 0], interpolation="area"), "interpolation"),
    (T.TrivialAugmentWide, dict(num_magnitude_bins=1), "num_magnitude_bins"),
    (T.AutoAugment, dict(policy="cifar100"), "policy"),
    (T.AugMix, dict(severity=11), "severity"),
    (T.AugMix, dict(mixture_width=0), "mixture_width"),
    (T.AugMix, dict(alpha=0), "alpha"),
    (T.AugmentOp, dict(name="Shear"), "name"),
    (T.AugmentOp, dict(name="Posterize", magnitude=9), "magnitude"),
    (T.AugmentOp, dict(name="Solarize", magnitude=1.5), "magnitude"),
    (D.RandomResizedCropRGBImageDecoder, dict(output_size=(0, 8)), "output_size"),
    (D.RandomResizedCropRGBImageDecoder, dict(output_size=(8, 8), ratio=(2, 1)), "ratio"),
    (D.RandomResizedCropRGBImageDecoder, dict(output_size=(8, 8), seed=None, second_seed=1), "second_seed"),
    (D.CenterCropRGBImageDecoder, dict(output_size=(8, 8), ratio=0), "ratio"),
    (D.CenterCropRGBImageDecoder, dict(output_size=(8, 70000)), "output_size"),
    (D.ResizePadRGBImageDecoder, dict(output_size=(8, 8), scale=(0.5, 2)), "scale"),
    (D.ResizePadRGBImageDecoder, dict(output_size=(8, 8), fill=(0, 0)), "fill"),
    (D.MosaicRGBImageDecoder, dict(imgsz=15), "imgsz"),
    (D.MosaicRGBImageDecoder, dict(p=1.5), "p"),
    (D.MosaicRGBImageDecoder, dict(close_epoch=-1), "close_epoch"),
    (D.LabelMosaic, dict(n=3, seed=1), "n"),
    (T.MixUp, dict(p=2), "p"),
    (T.CopyPaste, dict(p=2), "p"),
    (T.CutMix, dict(p=2), "p"),
    (T.CutMix, dict(beta=0), "beta"),
    (T.CutMix, dict(num_areas=0), "num_areas"),
    (T.LabelCutMix, dict(beta=-1, seed=1), "beta"),
    (T.LabelMixUp, dict(p=-1, seed=1), "p"),
    (D.LetterBoxRGBImageDecoder, dict(new_shape=(8, 8), fill=(1, 2)), "fill"),
    (D.RandomIoUCropRGBImageDecoder, dict(output_size=8, min_aspect_ratio=3), "min_aspect_ratio"),
    (T.LetterBox, dict(new_shape=8, auto=True), "auto"),
    (T.LetterBox, dict(new_shape=0), "new_shape"),
    (T.LabelLetterBox, dict(new_shape=(8, -1)), "new_shape"),
    (T.LetterBox, dict(new_shape=8, rect=True), "rect"),
    (T.RandomHSV, dict(hgain=2), "hgain"),
    (T.LabelRandomHSV, dict(vgain=-1, seed=1), "vgain"),
    (T.RandomIoUCrop, dict(output_size=8, min_scale=0), "min_scale"),
    (T.RandomIoUCrop, dict(output_size=8, sampler_options=[]), "sampler_options"),
    (T.LabelRandomIoUCrop, dict(output_size=8, trials=0, seed=1), "trials"),
    (T.RandomZoomOut, dict(side_range=(0.5, 2)), "side_range"),
    (T.LabelRandomZoomOut, dict(p=2, seed=1), "p"),
    (D.RaggedDecoder, dict(max_rows=-1), "max_rows"),
    (D.RaggedDecoder, dict(min_visibility=2), "min_visibility"),
    (D.RaggedDecoder, dict(min_size=-1), "min_size"),
    (D.RaggedDecoder, dict(wh_thr=-2), "wh_thr"),
    (T.RandomPerspective, dict(degrees=-1), "degrees"),
    (T.RandomPerspective, dict(shear=90), "shear"),
    (T.RandomPerspective, dict(fill=(0, 300, 0)), "fill"),
    (T.LabelRandomPerspective, dict(scale=-0.5, seed=1), "scale"),
    (T.LabelRandomPerspective, dict(degrees=10), "seed"),
    (D.MaskDecoder, dict(fill=-1), "fill"),
    (D.PolygonMaskDecoder, dict(ratio=0), "ratio"),
    (D.TokenDecoder, dict(context_length=0), "context_length"),
    (D.TokenDecoder, dict(sot=-3), "sot"),
    (D.CaptionDecoder, dict(max_bytes=-1), "max_bytes"),
    (D.RandomClipDecoder, dict(num_frames=0), "num_frames"),
    (D.RandomClipDecoder, dict(num_frames=4, stride=0), "stride"),
    (D.RandomClipDecoder, dict(num_frames=4, short="wrap"), "short"),
    (D.RandomClipDecoder, dict(num_frames=4, fps=-5.0), "fps"),
    (D.ClipDecoder, dict(num_frames=4, num_clips=0), "num_clips"),
    (D.AudioDecoder, dict(max_seconds=-1.0), "max_seconds"),
    (D.RandomAudioCropDecoder, dict(seconds=0.0), "seconds"),
    (D.RandomAudioCropDecoder, dict(seconds=float("inf")), "seconds"),
    (D.ClipDecoder, dict(num_frames=4, geometry=D.CenterCropRGBImageDecoder((8, 8)), short="cut"), "short"),
]


def _call(cls, args):
    return cls(*args) if isinstance(args, tuple) else cls(**args)


@pytest.mark.parametrize("cls,args,arg", BAD, ids=[f"{c.__name__}-{a}" for c, _, a in BAD])
def test_bad_argument_fails_at_construction(cls, args, arg):
    with pytest.raises(ValueError) as info:
        _call(cls, args)
    msg = str(info.value)
    assert re.match(rf"{cls.__name__}: .*\b{arg}\b", msg), msg
    assert not DTYPE_CODE.search(msg), f"a numpy type code, not the type's name: {msg}"


DTYPE_CODE = re.compile(r"[<>|=][biufc][0-9]+")


# Classes that take no argument Go checks: markers and tensor-level ops,
# decoders without arguments, and the ones whose arguments are all indices
# or ids.
NOTHING_TO_CHECK = {"ToTensor", "ToDevice", "ToTorchImage", "ToTorchVideo", "Convert", "View", "Squeeze",
                    "ModuleWrapper", "Photometric", "MixupToOneHot", "ReplaceLabel", "PadRGBImageDecoder", "IntDecoder",
                    "FloatDecoder", "NDArrayDecoder", "BytesDecoder", "SimpleRGBImageDecoder",
                    "ResizedCropRGBImageDecoder", "MonoMix"}


def test_every_builtin_operation_is_covered():
    """Every Operation class the package exports is in BAD or has nothing
    for Go to check: a new operation must say which."""
    covered = {cls.__name__ for cls, _, _ in BAD}
    for module in (T, D):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, Operation):
                assert name in covered or name in NOTHING_TO_CHECK, name
    assert not covered & NOTHING_TO_CHECK


def test_valid_arguments_pass():
    """The defaults and FFCV-SSL's own calls construct."""
    for make in (lambda: T.RandomSolarization(0.2, 128), lambda: T.RandomColorJitter(0.8, 0.4, 0.4, 0.2, 0.1),
                 lambda: T.LabelColorJitter(seed=1), lambda: T.GaussianBlur(0.5, sigma=1.0),
                 lambda: T.RandomResizedCrop((224, 224), seed=10, second_seed=5),
                 lambda: T.LabelRandomResizedCrop((224, 224), 10, (0.08, 1), (0.4, 1), second_seed=5),
                 lambda: T.CornerCrop(32, 0.5, "bottom_right"), lambda: T.AugMix(), lambda: T.RandomErasing(),
                 lambda: D.ResizePadRGBImageDecoder((64, 64)), lambda: D.RaggedDecoder(),
                 lambda: D.TokenDecoder(extra="attention_mask")):
        make()


def test_output_size_set_later_is_checked():
    """FFCV-SSL's training script sets RandomResizedCrop.output_size each
    epoch: a bad one fails there, the old one stays."""
    rrc = T.RandomResizedCrop((224, 224))
    rrc.output_size = 160
    with pytest.raises(ValueError, match="RandomResizedCrop: output_size"):
        rrc.output_size = 0
    assert rrc.output_size == (160, 160)


def test_augment_op_names_are_the_cores():
    """AUGMENT_OPS is the Go core's list (ffcv_augment_ops), and AugmentOp
    takes each name in it."""
    assert AUGMENT_OPS == _lib.augment_ops() and len(AUGMENT_OPS) == 15
    for name in AUGMENT_OPS:
        T.AugmentOp(name, 0.0)


# Errors of a loader's build name the output and the operation as the user
# wrote them: the class, not the Go core's name of the op ("rgb_rrc",
# "normalize"), and types as numpy names ("int32", not "<i4").
IMAGES = str(FIXTURES / "images_jpg_var.beton")
ARRAYS = str(FIXTURES / "arrays.beton")
BUILD_ERRORS = [
    (IMAGES, {"image": [D.RandomResizedCropRGBImageDecoder((16, 16)),
                        T.NormalizeImage(np.zeros(4), np.ones(4), np.float16)]},
     'output "image": field "image", NormalizeImage: mean has 4 values for 3 channels', "normalize"),
    (ARRAYS, {"arr": [D.RandomResizedCropRGBImageDecoder((16, 16))]},
     'output "arr": field "arr", RandomResizedCropRGBImageDecoder: cannot decode a NDArrayField', "rgb_rrc"),
    (ARRAYS, {"arr": [D.CenterCropRGBImageDecoder((16, 16), 0.5)]},
     'output "arr": field "arr", CenterCropRGBImageDecoder: cannot decode a NDArrayField', "rgb_center"),
]


@pytest.mark.parametrize("path,pipelines,want,internal", BUILD_ERRORS,
                         ids=["NormalizeImage", "RandomResizedCrop", "CenterCrop"])
def test_build_errors_name_what_the_user_wrote(path, pipelines, want, internal):
    from ffcv_go import Loader
    with pytest.raises(ValueError) as info:
        next(iter(Loader(path, batch_size=4, pipelines=pipelines)))
    msg = str(info.value)
    assert want in msg, msg
    assert internal not in msg and not DTYPE_CODE.search(msg), msg


def test_a_sample_error_names_the_operation_as_written(tmp_path):
    """At run time too: "RandomResizedCropRGBImageDecoder: bad sample data", not "rgb_rrc: ..."."""
    import shutil
    from ffcv_go import Loader, SampleError
    from ffcv_go.reader import Reader
    path = tmp_path / "c.beton"
    shutil.copy(IMAGES, path)
    ptr = int(Reader(path).metadata["f0"]["data_ptr"][2])
    data = bytearray(path.read_bytes())
    data[ptr:ptr + 16] = bytes(16)  # no JPEG marker
    path.write_bytes(bytes(data))
    loader = Loader(path, batch_size=4, num_workers=1, pipelines={"image": [D.RandomResizedCropRGBImageDecoder((16, 16))]})
    with pytest.raises(SampleError, match='sample 2, field "image": RandomResizedCropRGBImageDecoder: bad sample data'):
        for _ in loader:
            pass
