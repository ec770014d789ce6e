"""FFCV-SSL's own programs, unchanged but for `ffcv` -> `ffcv_go` and the
device: the loaders of its examples/train_ssl.py (the same for its SimCLR,
BYOL, VICReg and Barlow Twins runs), its README's label-crop recipe and its
examples/ffcv_test_cropping_with_labels.py (non-overlapping crops with
second_seed, PadRGBImageDecoder), run on real photos, with pixel statistics
checked against the arguments the programs give (solarization and
grayscale rates, crop geometry)."""
import numpy as np
import pytest
import torch as ch
import torch.nn.functional as F
from torch import nn
from torchvision import transforms

import ffcv_go
from ffcv_go.fields import IntField, RGBImageField
from ffcv_go.fields.basics import IntDecoder
from ffcv_go.fields.rgb_image import CenterCropRGBImageDecoder
from ffcv_go.loader import Loader, OrderOption
from ffcv_go.pipeline.operation import Operation
from ffcv_go.transforms import (NormalizeImage, RandomHorizontalFlip, Squeeze, ToDevice, ToTensor,
                                ToTorchImage)

ffcv = ffcv_go  # the FFCV-SSL programs' module name

List = list
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406]) * 255
IMAGENET_STD = np.array([0.229, 0.224, 0.225]) * 255
DEFAULT_CROP_RATIO = 224 / 256
this_device = "cpu"  # the script's f'cuda:{self.gpu}'


@pytest.fixture(scope="module")
def photos(photo_folder, tmp_path_factory):
    """The 24 photos of conftest's folder, as JPEGs of at most 256 px, with their class."""
    from conftest import FnDataset, write
    import torchvision
    ds = torchvision.datasets.ImageFolder(str(photo_folder))
    path = tmp_path_factory.mktemp("ssl_programs") / "train.beton"
    return write(path, {"image": RGBImageField(write_mode="jpg", max_resolution=256), "label": IntField()},
                 FnDataset(len(ds), lambda i: (np.asarray(ds[i][0].convert("RGB")), ds[i][1])), num_workers=2)


# ---- examples/train_ssl.py: ImageNetTrainer.create_train_loader_ssl and
# create_val_loader, as the script writes them (self.* become locals).

def create_train_loader_ssl(train_dataset, num_workers, batch_size, distributed, in_memory):
    # First branch of augmentations
    decoder = ffcv_go.transforms.RandomResizedCrop((224, 224))
    image_pipeline_big: List[Operation] = [
        decoder,
        RandomHorizontalFlip(),
        ffcv_go.transforms.RandomColorJitter(0.8, 0.4, 0.4, 0.2, 0.1),
        ffcv_go.transforms.RandomGrayscale(0.2),
        ToTensor(),
        ToDevice(ch.device(this_device), non_blocking=True),
        ToTorchImage(),
        NormalizeImage(IMAGENET_MEAN, IMAGENET_STD, np.float16),
        transforms.GaussianBlur(kernel_size=(5, 9), sigma=(0.1, 2))
    ]

    # Second branch of augmentations
    decoder2 = ffcv_go.transforms.RandomResizedCrop((224, 224))
    image_pipeline_big2: List[Operation] = [
        decoder2,
        RandomHorizontalFlip(),
        ffcv_go.transforms.RandomColorJitter(0.8, 0.4, 0.4, 0.2, 0.1),
        ffcv_go.transforms.RandomGrayscale(0.2),
        ffcv_go.transforms.RandomSolarization(0.2, 128),
        ToTensor(),
        ToDevice(ch.device(this_device), non_blocking=True),
        ToTorchImage(),
        NormalizeImage(IMAGENET_MEAN, IMAGENET_STD, np.float16)
    ]

    # SSL Augmentation pipeline
    label_pipeline: List[Operation] = [
        IntDecoder(),
        ToTensor(),
        Squeeze(),
        ToDevice(ch.device(this_device), non_blocking=True)
    ]

    pipelines = {
        'image': image_pipeline_big,
        'label': label_pipeline,
        'image_0': image_pipeline_big2
    }

    order = OrderOption.RANDOM if distributed else OrderOption.QUASI_RANDOM
    custom_field_mapper = {"image_0": "image"}

    # Create data loader
    loader = ffcv_go.Loader(train_dataset,
                            batch_size=batch_size,
                            num_workers=num_workers,
                            order=order,
                            os_cache=in_memory,
                            drop_last=True,
                            pipelines=pipelines,
                            distributed=distributed,
                            custom_field_mapper=custom_field_mapper)
    return loader, decoder, decoder2


def create_val_loader(val_dataset, num_workers, batch_size, resolution, distributed):
    res_tuple = (resolution, resolution)
    cropper = CenterCropRGBImageDecoder(res_tuple, ratio=DEFAULT_CROP_RATIO)
    image_pipeline = [
        cropper,
        ToTensor(),
        ToDevice(ch.device(this_device), non_blocking=True),
        ToTorchImage(),
        NormalizeImage(IMAGENET_MEAN, IMAGENET_STD, np.float16)
    ]

    label_pipeline = [
        IntDecoder(),
        ToTensor(),
        Squeeze(),
        ToDevice(ch.device(this_device),
                 non_blocking=True)
    ]

    order = OrderOption.SEQUENTIAL

    loader = Loader(val_dataset,
                    batch_size=batch_size,
                    num_workers=num_workers,
                    order=order,
                    drop_last=False,
                    pipelines={
                        'image': image_pipeline,
                        'label': label_pipeline
                    },
                    distributed=distributed)
    return loader


def pixels(batch):
    """Normalised float16 (B, C, H, W) back to uint8 levels (float)."""
    x = batch.float().permute(0, 2, 3, 1).numpy()
    return x * IMAGENET_STD + IMAGENET_MEAN


def test_train_ssl_loaders(photos):
    """The script's loaders at its first resolution (min_res 64, set on the
    decoders as its train() does): two views per image, the second
    solarized with probability 0.2 (FFCV-SSL's RandomSolarization(0.2, 128):
    before the fix, every image), both grey with probability 0.2."""
    np.random.seed(0)  # the loader's seed, which the script leaves to chance
    loader, decoder, decoder2 = create_train_loader_ssl(photos, num_workers=2, batch_size=8, distributed=False,
                                                        in_memory=True)
    decoder.output_size = (64, 64)
    decoder2.output_size = (64, 64)
    epochs = 30
    dark, grey, n = [0, 0], [0, 0], 0
    for epoch in range(epochs):
        for loaders in loader:
            images_big_0, labels_big, images_big_1 = loaders[0], loaders[1], loaders[2]
            assert images_big_0.shape == images_big_1.shape == (8, 3, 64, 64)
            assert images_big_0.dtype == images_big_1.dtype == ch.float16 and labels_big.shape == (8,)
            for k, view in enumerate((pixels(images_big_0), pixels(images_big_1))):
                dark[k] += int((np.percentile(view.reshape(8, -1), 99, axis=1) < 127.5).sum())
                # Grey: the channels agree everywhere (view 0's blur keeps that).
                grey[k] += int((np.abs(view - view[..., :1]).reshape(8, -1).max(axis=1) < 1.0).sum())
            n += 8
    assert n == epochs * 24
    # A solarized image has no level above 127. So has a dark crop, which
    # is as frequent in both views: solarized = (dark_1 - dark_0) / (1 - dark_0).
    d0, d1 = dark[0] / n, dark[1] / n
    assert d0 < 0.3, f"{d0:.3f} of the first view's crops are dark"
    solar = (d1 - d0) / (1 - d0)
    assert abs(solar - 0.2) < 0.07, f"solarized fraction {solar:.3f} (dark crops {d0:.3f}, {d1:.3f}), want 0.2"
    for k in range(2):
        assert abs(grey[k] / n - 0.2) < 0.05, f"view {k}: grey fraction {grey[k] / n:.3f}, want 0.2"
    # The two views of an image are different crops.
    loaders = next(iter(loader))
    assert not ch.equal(loaders[0], loaders[2])


def test_val_loader(photos):
    """The script's validation loader: centre crops, every image once, in order."""
    val = create_val_loader(photos, num_workers=2, batch_size=10, resolution=64, distributed=False)
    images, labels = zip(*[(x, y) for x, y in val])
    assert [len(y) for y in labels] == [10, 10, 4]
    assert images[0].shape == (10, 3, 64, 64) and images[0].dtype == ch.float16
    from ffcv_go.reader import Reader
    assert ch.cat(labels).tolist() == Reader(photos).metadata["f1"].tolist()


# ---- the script's losses, one training step of each method on a loader batch
# (its train_loop: the two views concatenated, embeddings viewed as (2, B, -1)).

def _simclr(z, _teacher, t=0.5):
    z = F.normalize(z.reshape(-1, z.shape[-1]), dim=1)
    n = z.shape[0] // 2
    sim = (z @ z.T / t).fill_diagonal_(float("-inf"))
    return F.cross_entropy(sim, ch.cat([ch.arange(n, 2 * n), ch.arange(n)]))


def _vicreg(z, _teacher):
    a, b = z[0], z[1]
    std = sum(F.relu(1 - ch.sqrt(x.var(0) + 1e-4)).mean() for x in (a, b))
    cov = sum(((x - x.mean(0)).T @ (x - x.mean(0)) / (len(x) - 1)).fill_diagonal_(0).pow(2).sum() / x.shape[1]
              for x in (a, b))
    return 25 * F.mse_loss(a, b) + 25 * std + cov


def _barlow(z, _teacher, lambd=0.0051):
    a, b = ((x - x.mean(0)) / (x.std(0) + 1e-5) for x in (z[0], z[1]))
    c = a.T @ b / len(a)
    return (1 - c.diagonal()).pow(2).sum() + lambd * c.fill_diagonal_(0).pow(2).sum()


def _byol(z, teacher):
    return (2 - 2 * F.cosine_similarity(z, teacher.flip(0), dim=-1)).mean()


@pytest.mark.parametrize("loss", [_simclr, _byol, _vicreg, _barlow], ids=["simclr", "byol", "vicreg", "barlow"])
def test_train_ssl_step(photos, loss):
    ch.manual_seed(0)
    loader, decoder, decoder2 = create_train_loader_ssl(photos, num_workers=2, batch_size=8, distributed=False,
                                                        in_memory=True)
    decoder.output_size = decoder2.output_size = (32, 32)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 16))
    opt = ch.optim.SGD(model.parameters(), lr=0.01)
    for loaders in loader:
        images_big = ch.cat((loaders[0], loaders[2]), dim=0).float()
        batch_size = loaders[1].size(0)
        embedding_big = model(images_big).view(2, batch_size, -1)
        with ch.no_grad():
            teacher = model(images_big).view(2, batch_size, -1)
        loss_train = loss(embedding_big, teacher)
        opt.zero_grad()
        loss_train.backward()
        opt.step()
        assert ch.isfinite(loss_train) and all(ch.isfinite(p.grad).all() for p in model.parameters())


# ---- README.md, "Return the parameters of a Data Augmentation"

def test_readme_label_crop_recipe(photos):
    """The README's image and label-crop pipelines (seed 5), with its
    custom_field_mapper: each crop parameter row is the crop of the image
    view beside it, with the recipe's scale and ratio."""
    from ffcv_go.libffcv import imdecode, resize_crop
    from ffcv_go.reader import Reader
    image_pipeline = [
        ffcv.transforms.RandomResizedCrop(
            output_size=(224, 224), ratio=(0.4, 1.0), seed=5, scale=(0.08, 1.0)
        ),
        ToTensor(),
        ToDevice(ch.device('cpu'), non_blocking=True),
        ToTorchImage(),
        NormalizeImage(IMAGENET_MEAN, IMAGENET_STD, np.float16),
    ]
    label_crops_pipeline = [
        ffcv.transforms.LabelRandomResizedCrop(
            output_size=(224, 224),
            ratio=(0.4, 1.0),
            seed=5,
            scale=(0.08, 1.0),
        ),
        ToTensor(),
        Squeeze(),
        ToDevice(ch.device("cpu"), non_blocking=True)
    ]
    custom_field_mapper = {"crop_parameters": "image"}
    loader = Loader(photos, batch_size=8, order=OrderOption.RANDOM, num_workers=2,
                    pipelines={"image": image_pipeline, "label": None, "crop_parameters": label_crops_pipeline},
                    custom_field_mapper=custom_field_mapper)
    reader = Reader(photos)
    meta = reader.metadata["f0"]
    n = 0
    for _ in range(2):
        for images, crops in loader:
            ids = loader._last_ids
            assert crops.dtype == ch.int32 and crops.shape == (8, 6)
            for i in range(8):
                w, h, top, left, ch_, cw = crops[i].tolist()
                assert (w, h) == (int(meta["width"][ids[i]]), int(meta["height"][ids[i]]))
                assert 0 <= top and top + ch_ <= h and 0 <= left and left + cw <= w
                # torchvision's sampling: area fraction in scale, w/h in ratio (up to rounding)
                assert 0.08 * w * h - w - h <= ch_ * cw <= w * h
                assert 0.4 * (ch_ - 1) <= cw + 1 and cw - 1 <= 1.0 * (ch_ + 1)
                whole = np.empty((h, w, 3), np.uint8)
                imdecode(np.frombuffer(reader.read(int(ids[i]), "image"), np.uint8), whole, h, w, h, w)
                want = np.empty((224, 224, 3), np.uint8)
                resize_crop(whole, top, top + ch_, left, left + cw, want)
                got = pixels(images[i:i + 1])[0]
                assert np.abs(want - got).mean() < 6, f"sample {ids[i]}: crop {crops[i].tolist()}"
                n += 1
    assert n == 48


# ---- examples/ffcv_test_cropping_with_labels.py: its create_loader, with the
# data path an argument (the script reads $FFCV_DATAT_PATH), and its main.

def create_loader(path):
    image_pipeline = [
        ffcv.transforms.RandomResizedCrop(
            output_size=(224, 224), ratio=(0.4, 1.0), seed=5, scale=(0.08, 1.0)
        ),
        ToTensor(),
        ToDevice(ch.device(this_device), non_blocking=True),
        ToTorchImage(),
        NormalizeImage(IMAGENET_MEAN, IMAGENET_STD, np.float16),
    ]
    image_pipeline2 = [
        ffcv.transforms.RandomResizedCrop(
            output_size=(224, 224), ratio=(0.4, 1.0), seed=10, second_seed=5, scale=(0.08, 1.0)
        ),
        ToTensor(),
        ToDevice(ch.device(this_device), non_blocking=True),
        ToTorchImage(),
        NormalizeImage(IMAGENET_MEAN, IMAGENET_STD, np.float16),
    ]
    label_pipeline = [IntDecoder(), ToTensor()]
    image_pipeline_pad = [
        ffcv.transforms.PadRGBImageDecoder(),
        ToTensor(),
        ToDevice(ch.device(this_device), non_blocking=True),
        ToTorchImage(),
        NormalizeImage(IMAGENET_MEAN, IMAGENET_STD, np.float16),
    ]
    label_crops_pipeline1 = [
        ffcv.transforms.LabelRandomResizedCrop(output_size=(224, 224), ratio=(0.4, 1.0), seed=5, scale=(0.08, 1.0)),
        ToTensor(),
        Squeeze(),
        ToDevice(ch.device("cpu"), non_blocking=True),
    ]
    label_crops_pipeline2 = [
        ffcv.transforms.LabelRandomResizedCrop(output_size=(224, 224), ratio=(0.4, 1.0), seed=10, second_seed=5,
                                               scale=(0.08, 1.0)),
        ToTensor(),
        Squeeze(),
        ToDevice(ch.device("cpu"), non_blocking=True),
    ]
    return Loader(path, num_workers=4, batch_size=4,
                  pipelines={"image": image_pipeline, "label": label_pipeline, "image2": image_pipeline2,
                             "crop_image": label_crops_pipeline1, "crop_image2": label_crops_pipeline2,
                             "full_image": image_pipeline_pad},
                  order=OrderOption.RANDOM,
                  custom_field_mapper={"image2": "image", "crop_image": "image", "crop_image2": "image",
                                       "full_image": "image"})


def cropping_main(loader):
    """The script's main: the first batch's two crops saved side by side, and
    each padded image with the two crop boxes drawn on it."""
    import torchvision
    from torchvision.utils import draw_bounding_boxes, make_grid, save_image
    for loaders in loader:
        labels_crops = ch.cat([loaders[3], loaders[4]], dim=1).half()
        images_big = ch.cat((loaders[0], loaders[2]), dim=0)
        save_image(images_big, "./images_cropped.jpeg", normalize=True)
        list_images = []
        for k in range(4):
            bbox = labels_crops[k]
            y1, x1, y2, x2 = bbox[2:6].int()
            new_bbox = ch.tensor((x1, y1, x2, y2), dtype=ch.int)
            new_bbox[2] += new_bbox[0]
            new_bbox[3] += new_bbox[1]
            y1, x1, y2, x2 = bbox[8:12].int()
            new_bbox2 = ch.tensor((x1, y1, x2, y2), dtype=ch.int)
            new_bbox2[2] += new_bbox2[0]
            new_bbox2[3] += new_bbox2[1]
            new_bbox = ch.cat((new_bbox.unsqueeze(0), new_bbox2.unsqueeze(0)), dim=0)
            grid_image = (make_grid(loaders[-1][k].unsqueeze(0), normalize=True) * 255).byte()
            list_images.append(draw_bounding_boxes(grid_image, new_bbox))
        new_image = ch.cat(list_images, dim=2)
        torchvision.transforms.ToPILImage()(new_image).save("./images_with_bouding_boxes.jpeg")
        exit(0)


def test_cropping_with_labels_program(photos, tmp_path, monkeypatch):
    """The script runs (it saves its two pictures and exits); then, over
    four epochs: the second view's crop (second_seed=5) never overlaps the
    first's and lies in the largest strip of the image beside it, each view
    is its reported crop of the image, and the padded view holds the whole
    image at its top-left, zeros elsewhere."""
    from PIL import Image
    from ffcv_go.libffcv import imdecode, resize_crop
    from ffcv_go.reader import Reader
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        cropping_main(create_loader(photos))
    for name in ("images_cropped.jpeg", "images_with_bouding_boxes.jpeg"):
        with Image.open(tmp_path / name) as im:
            assert im.width > 224 and im.height >= 224
    loader = create_loader(photos)
    reader = Reader(photos)
    meta = reader.metadata["f0"]
    H, W = int(meta["height"].max()), int(meta["width"].max())
    n = 0
    for _ in range(4):
        for image, _, image2, crop, crop2, full in loader:
            assert full.shape == (4, 3, H, W) and crop.dtype == crop2.dtype == ch.int32
            for i, k in enumerate(loader._last_ids.tolist()):
                w, h, t1, l1, h1, w1 = crop[i].tolist()
                w_, h_, t2, l2, h2, w2 = crop2[i].tolist()
                assert (w, h) == (w_, h_) == (int(meta["width"][k]), int(meta["height"][k]))
                a = (l1, t1, l1 + w1, t1 + h1)
                b = (l2, t2, l2 + w2, t2 + h2)
                if a == (0, 0, w, h):  # no strip beside it (fewer than 1 sample in 10,000)
                    assert b == a
                else:
                    assert b[2] <= a[0] or a[2] <= b[0] or b[3] <= a[1] or a[3] <= b[1], (k, a, b)
                    strips = [(0, 0, w, t1), (0, t1 + h1, w, h), (0, 0, l1, h), (l1 + w1, 0, w, h)]
                    s = max(strips, key=lambda r: (r[2] - r[0]) * (r[3] - r[1]))  # the first of the largest
                    assert s[0] <= b[0] and s[1] <= b[1] and b[2] <= s[2] and b[3] <= s[3], (k, a, b, s)
                whole = np.empty((h, w, 3), np.uint8)
                imdecode(np.frombuffer(reader.read(k, "image"), np.uint8), whole, h, w, h, w)
                for view, (t, l, ch_, cw) in ((image, (t1, l1, h1, w1)), (image2, (t2, l2, h2, w2))):
                    want = np.empty((224, 224, 3), np.uint8)
                    resize_crop(whole, t, t + ch_, l, l + cw, want)
                    assert np.abs(want - pixels(view[i:i + 1])[0]).mean() < 6, (k, t, l, ch_, cw)
                padded = pixels(full[i:i + 1])[0]
                assert np.abs(padded[:h, :w] - whole).max() < 1.5
                assert np.abs(padded[h:]).max(initial=0) < 1.5 and np.abs(padded[:, w:]).max(initial=0) < 1.5
                n += 1
    assert n == 4 * 24
