"""Several views of one image field (FFCV-SSL's custom_field_mapper): each
view is its own output with its own pipeline and its own random draws, and a
view does not change when other views are added, removed or reordered."""
import numpy as np
import pytest

from conftest import collect, to_numpy
from ffcv_go import Loader
from ffcv_go.fields import IntField, RGBImageField
from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder, SimpleRGBImageDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.transforms import RandomHorizontalFlip, RandomResizedCrop, ToTensor


@pytest.fixture(scope="module")
def photos_beton(photo_folder, tmp_path_factory):
    from conftest import FnDataset, write
    import torchvision
    ds = torchvision.datasets.ImageFolder(str(photo_folder))
    path = tmp_path_factory.mktemp("views") / "photos.beton"

    def sample(i):
        img, label = ds[i]
        return np.asarray(img.convert("RGB")), label
    return write(path, {"image": RGBImageField(write_mode="jpg", max_resolution=256), "label": IntField()},
                 FnDataset(len(ds), sample), num_workers=2)


def rrc(size=64, scale=(0.08, 1.0)):
    return [RandomResizedCropRGBImageDecoder((size, size), scale=scale), RandomHorizontalFlip(), ToTensor()]


def views_loader(path, views, order_seed=3, workers=2, **kw):
    pipelines = {"image": None, "label": [IntDecoder(), ToTensor()]}
    pipelines.update(views)
    return Loader(path, batch_size=8, num_workers=workers, order=OrderOption.RANDOM, seed=order_seed,
                  pipelines=pipelines, custom_field_mapper={v: "image" for v in views}, **kw)


def test_outputs_follow_mapper_order(photos_beton):
    batches = collect(views_loader(photos_beton, {"v1": rrc(64), "v0": rrc(32)}))
    labels, v1, v0 = to_numpy(batches[0])
    assert labels.shape == (8, 1)
    assert v1.shape == (8, 64, 64, 3) and v0.shape == (8, 32, 32, 3)


def test_views_draw_apart(photos_beton):
    """Two views with the same pipeline get different crops of the same image."""
    batches = collect(views_loader(photos_beton, {"a": rrc(), "b": rrc()}))
    differ = sum(not np.array_equal(a, b) for batch in batches for a, b in zip(to_numpy(batch)[1], to_numpy(batch)[2]))
    assert differ >= 0.9 * sum(len(b[0]) for b in batches)


@pytest.mark.parametrize("workers", [1, 3])
def test_view_is_independent_of_other_views(photos_beton, workers):
    """A view's pixels depend on (seed, epoch, sample, view name, op), not on
    which other views exist or how many workers run."""
    alone = collect(views_loader(photos_beton, {"a": rrc()}, workers=1))
    crowd = collect(views_loader(photos_beton, {"z": rrc(48, (0.05, 0.4)), "a": rrc(), "b": rrc()}, workers=workers))
    for x, y in zip(alone, crowd):
        x, y = to_numpy(x), to_numpy(y)
        np.testing.assert_array_equal(x[0], y[0])
        np.testing.assert_array_equal(x[1], y[2])


def test_a_field_output_is_unchanged_by_views(photos_beton):
    """The field's own pipeline keeps the draws it had without views."""
    plain = Loader(photos_beton, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=3,
                   pipelines={"image": rrc(), "label": None})
    with_views = Loader(photos_beton, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=3,
                        pipelines={"image": rrc(), "label": None, "v": rrc()}, custom_field_mapper={"v": "image"})
    for x, y in zip(collect(plain), collect(with_views)):
        np.testing.assert_array_equal(to_numpy(x)[0], to_numpy(y)[0])
        assert not np.array_equal(to_numpy(y)[0], to_numpy(y)[1])


def test_views_match_the_whole_image_crop(photos_beton):
    """scale=(1, 1) at the image's aspect ratio crops the whole image: every
    view then equals the full decode resized, whatever the other views do."""
    full = [RandomResizedCropRGBImageDecoder((64, 64), scale=(1.0, 1.0), ratio=(1e-3, 1e3)), ToTensor()]
    a = collect(views_loader(photos_beton, {"w": full}))
    b = collect(views_loader(photos_beton, {"x": rrc(), "w": full, "y": rrc(32)}))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(to_numpy(x)[1], to_numpy(y)[2])


def test_ffcv_ssl_random_resized_crop_is_a_decoder(photos_beton):
    """FFCV-SSL's transforms.RandomResizedCrop((h, w), scale, ratio) opens a
    view's pipeline; FFCV 1.0's RandomResizedCrop(scale, ratio, size) crops
    decoded images later in one. First in a pipeline both decode the crop."""
    ssl = collect(views_loader(photos_beton, {"v": [RandomResizedCrop((64, 64), scale=(0.2, 1.0)),
                                                    RandomHorizontalFlip(), ToTensor()]}))
    ours = collect(views_loader(photos_beton, {"v": rrc(64, (0.2, 1.0))}))
    v1 = collect(views_loader(photos_beton, {"v": [RandomResizedCrop((0.2, 1.0), (3 / 4, 4 / 3), 64),
                                                   RandomHorizontalFlip(), ToTensor()]}))
    for x, y, z in zip(ssl, ours, v1):
        np.testing.assert_array_equal(to_numpy(x)[1], to_numpy(y)[1])
        np.testing.assert_array_equal(to_numpy(z)[1], to_numpy(y)[1])


def test_ffcv10_random_resized_crop_after_a_decoder(photos_beton):
    """After SimpleRGBImageDecoder-free decoding (a centre-ish RRC decoder at
    full scale), FFCV 1.0's transform form crops the decoded image."""
    pipe = [RandomResizedCropRGBImageDecoder((96, 96), scale=(1.0, 1.0)),
            RandomResizedCrop((0.3, 1.0), (3 / 4, 4 / 3), 48), ToTensor()]
    out = collect(views_loader(photos_beton, {"v": pipe}))
    assert to_numpy(out[0])[1].shape == (8, 48, 48, 3)


def test_bad_mapper(photos_beton):
    with pytest.raises(ValueError, match="'nope', which is not a field"):
        Loader(photos_beton, 8, pipelines={"v": rrc()}, custom_field_mapper={"v": "nope"})
    with pytest.raises(ValueError, match="already a field"):
        Loader(photos_beton, 8, pipelines={}, custom_field_mapper={"label": "image"})
    with pytest.raises(TypeError, match="maps names to field names"):
        Loader(photos_beton, 8, pipelines={}, custom_field_mapper={"v": 0})


def test_view_pipeline_on_a_non_image_field(photos_beton):
    with pytest.raises(ValueError, match="view 'v': RandomResizedCropRGBImageDecoder decodes images, and field 'label' is a IntField"):
        Loader(photos_beton, 8, pipelines={"image": None, "v": rrc()}, custom_field_mapper={"v": "label"})


def test_unnamed_pipeline_is_an_error(photos_beton):
    with pytest.raises(ValueError, match="not a field"):
        Loader(photos_beton, 8, pipelines={"v": rrc()})


def test_dropped_view(photos_beton):
    out = collect(views_loader(photos_beton, {"a": rrc(), "b": None}))
    assert len(to_numpy(out[0])) == 2


def test_pipeline_spec_of_a_field_is_a_view(photos_beton):
    """FFCV 1.0's PipelineSpec(source=field) spells a view without the mapper:
    the same output, the same draws as the mapped view of that name."""
    from ffcv_go.pipeline import PipelineSpec
    spec = PipelineSpec("image", decoder=RandomResizedCropRGBImageDecoder((64, 64)),
                        transforms=[RandomHorizontalFlip(), ToTensor()])
    a = collect(Loader(photos_beton, batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=3,
                       pipelines={"image": rrc(), "label": None, "v": spec}))
    b = collect(views_loader(photos_beton, {"v": rrc()}))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(to_numpy(x)[1], to_numpy(y)[1])
        assert not np.array_equal(to_numpy(x)[0], to_numpy(x)[1])


def test_label_random_resized_crop_reports_a_views_crop(photos_beton):
    """FFCV-SSL's LabelRandomResizedCrop as a view of the image: with the
    view decoder's seed it reports the very crop that view took. Decoding
    that crop of the whole image with scale (1, 1) at the crop's aspect
    reproduces the view's pixels."""
    from ffcv_go.transforms import LabelRandomResizedCrop
    from ffcv_go.reader import Reader
    pipes = {"image": None, "label": None,
             "v": [RandomResizedCropRGBImageDecoder((64, 64), scale=(0.2, 1.0), seed=5), ToTensor()],
             "crop": [LabelRandomResizedCrop((64, 64), seed=5, scale=(0.2, 1.0), ratio=(3 / 4, 4 / 3))]}
    loader = Loader(photos_beton, batch_size=8, num_workers=2, order=OrderOption.SEQUENTIAL, seed=1,
                    pipelines=pipes, custom_field_mapper={"v": "image", "crop": "image"}, drop_last=False)
    from ffcv_go.libffcv import imdecode, resize_crop
    reader = Reader(photos_beton)
    meta = reader.metadata["f0"]
    seen = 0
    for v, crop in loader:
        ids = loader._last_ids
        for i in range(len(v)):
            w, h, top, left, ch, cw = (int(x) for x in np.asarray(crop[i]))
            assert (w, h) == (int(meta["width"][ids[i]]), int(meta["height"][ids[i]]))
            assert 0 <= top and top + ch <= h and 0 <= left and left + cw <= w and ch * cw >= 0.2 * w * h - w - h
            # The reported crop of the whole decoded image is the view, up to
            # the region decode's DCT scaling (a few levels on average on detailed
            # photos; another crop of the image differs by tens).
            whole = np.empty((h, w, 3), np.uint8)
            imdecode(np.frombuffer(reader.read(int(ids[i]), "image"), np.uint8), whole, h, w, h, w)
            want = np.empty((64, 64, 3), np.uint8)
            resize_crop(whole, top, top + ch, left, left + cw, want)
            assert np.abs(want.astype(int) - v[i].numpy().astype(int)).mean() < 6
            seen += 1
    assert seen == 24
    # Another seed, other crops.
    other = collect(Loader(photos_beton, batch_size=8, num_workers=2, order=OrderOption.SEQUENTIAL, seed=1,
                           pipelines={"image": None, "label": None,
                                      "crop": [LabelRandomResizedCrop((64, 64), seed=6, scale=(0.2, 1.0), ratio=(3 / 4, 4 / 3))]},
                           custom_field_mapper={"crop": "image"}, drop_last=False))
    first = collect(Loader(photos_beton, batch_size=8, num_workers=2, order=OrderOption.SEQUENTIAL, seed=1,
                           pipelines={"image": None, "label": None,
                                      "crop": [LabelRandomResizedCrop((64, 64), seed=5, scale=(0.2, 1.0), ratio=(3 / 4, 4 / 3))]},
                           custom_field_mapper={"crop": "image"}, drop_last=False))
    assert not all(np.array_equal(to_numpy(a)[0], to_numpy(b)[0]) for a, b in zip(first, other))


@pytest.fixture(scope="module")
def raw_photos(photos_beton, tmp_path_factory):
    """The photos stored raw: a crop decoder's view is then exactly the
    area resize of its crop."""
    from conftest import write
    from ffcv_go.reader import Reader
    r = Reader(photos_beton)
    items = [(bytes(r.read(i, "image")), int(r.metadata["f1"][i])) for i in range(r.num_samples)]
    return write(tmp_path_factory.mktemp("raw") / "raw.beton",
                 {"image": RGBImageField(write_mode="raw"), "label": IntField()}, items)


def test_second_seed_crops_never_overlap(raw_photos):
    """FFCV-SSL's second_seed, over 50 epochs: the crop a view with
    second_seed=5 takes never overlaps the crop seed 5 takes and lies in
    the largest strip of the image beside it (the first of the largest:
    above, below, left, right); LabelRandomResizedCrop with the same
    arguments reports exactly the crop the view took."""
    from ffcv_go.libffcv import resize_crop
    from ffcv_go.reader import Reader
    from ffcv_go.transforms import LabelRandomResizedCrop
    crop = dict(output_size=(32, 32), scale=(0.08, 1.0), ratio=(0.4, 1.0))
    first, second = dict(crop, seed=5), dict(crop, seed=10, second_seed=5)
    labels = Loader(raw_photos, batch_size=24, num_workers=2, order=OrderOption.RANDOM, seed=7,
                    pipelines={"image": None, "label": None, "a": [LabelRandomResizedCrop(**first)],
                               "b": [LabelRandomResizedCrop(**second)]},
                    custom_field_mapper={"a": "image", "b": "image"})
    n = whole = 0
    for _ in range(50):
        for a, b in labels:
            for (w, h, t1, l1, h1, w1), (_, _, t2, l2, h2, w2) in zip(a.tolist(), b.tolist()):
                ra, rb = (l1, t1, l1 + w1, t1 + h1), (l2, t2, l2 + w2, t2 + h2)
                n += 1
                if ra == (0, 0, w, h):
                    whole += 1
                    assert rb == ra
                    continue
                assert rb[2] <= ra[0] or ra[2] <= rb[0] or rb[3] <= ra[1] or ra[3] <= rb[1], (ra, rb)
                strips = [(0, 0, w, t1), (0, t1 + h1, w, h), (0, 0, l1, h), (l1 + w1, 0, w, h)]
                s = max(strips, key=lambda r: (r[2] - r[0]) * (r[3] - r[1]))
                assert s[0] <= rb[0] and s[1] <= rb[1] and rb[2] <= s[2] and rb[3] <= s[3], (ra, rb, s)
    assert n == 50 * 24 and whole < n // 100
    # The view with second_seed is exactly its reported crop, resized.
    views = Loader(raw_photos, batch_size=24, num_workers=2, order=OrderOption.RANDOM, seed=7,
                   pipelines={"image": None, "label": None, "v": [RandomResizedCrop(**second)],
                              "b": [LabelRandomResizedCrop(**second)]},
                   custom_field_mapper={"v": "image", "b": "image"})
    reader = Reader(raw_photos)
    for v, b in views:
        for view, (w, h, t, l, ch, cw), k in zip(v.numpy(), b.tolist(), views._last_ids.tolist()):
            img = np.frombuffer(reader.read(k, "image"), np.uint8).reshape(h, w, 3)
            want = np.empty((32, 32, 3), np.uint8)
            resize_crop(np.ascontiguousarray(img), t, t + ch, l, l + cw, want)
            assert np.array_equal(view, want), (k, t, l, ch, cw)
