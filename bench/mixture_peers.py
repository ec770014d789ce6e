"""bench/mixture.py's peers, MosaicML Streaming and litdata: each converts
the photos to its own format (the photos' JPEG bytes and their labels) and
reads the three sources with the same weights, decoding with PIL and
cropping with torchvision as their examples do. Imported only in the peers'
own venv (requirements-mixture-peers.txt); the datasets are module-level
classes so that the loaders' worker processes can unpickle them."""
import io
from pathlib import Path

import torch
from PIL import Image
from torchvision import transforms

SCALE, RATIO = (0.08, 1.0), (3 / 4, 4 / 3)


def transform(res):
    """RandomResizedCrop + flip, uint8 CHW: the work every system does."""
    return transforms.Compose([transforms.RandomResizedCrop(res, scale=SCALE, ratio=RATIO),
                               transforms.RandomHorizontalFlip(), transforms.PILToTensor()])


def decode(raw):
    return Image.open(io.BytesIO(raw)).convert("RGB")


# ---- MosaicML Streaming ------------------------------------------------------------------

def convert_streaming(parts, out, names):
    from streaming import MDSWriter
    for name, part in zip(names, parts):
        with MDSWriter(out=str(out / name), columns={"image": "bytes", "label": "int"}, size_limit=1 << 26) as w:
            for path, label in part:
                w.write({"image": Path(path).read_bytes(), "label": int(label)})


try:
    from streaming import StreamingDataset as _MDS

    class StreamingPhotos(_MDS):
        """A StreamingDataset whose samples are decoded and cropped."""

        def __init__(self, res, **kw):
            super().__init__(**kw)
            self.tf = transform(res)

        def __getitem__(self, i):
            s = super().__getitem__(i)
            return self.tf(decode(s["image"])), int(s["label"])
except ImportError:  # only the peer being run needs to import
    pass


def streaming_loader(args, data, names, weights):
    from streaming import Stream
    from streaming.base.util import clean_stale_shared_memory
    clean_stale_shared_memory()
    streams = [Stream(local=str(data / n), proportion=w) for n, w in zip(names, weights)]
    ds = StreamingPhotos(args.res, streams=streams, shuffle=True, shuffle_seed=0, batch_size=args.batch_size,
                         epoch_size=args.photos)
    return torch.utils.data.DataLoader(ds, batch_size=args.batch_size, num_workers=args.workers, drop_last=True,
                                       persistent_workers=args.workers > 0)


# ---- litdata -----------------------------------------------------------------------------

def _litdata_item(item):
    path, label = item
    return {"image": Path(path).read_bytes(), "label": int(label)}


def convert_litdata(parts, out, names):
    from litdata import optimize
    for name, part in zip(names, parts):
        optimize(fn=_litdata_item, inputs=[tuple(x) for x in part], output_dir=str(out / name), chunk_bytes="64MB",
                 num_workers=1, mode="overwrite")


try:
    from litdata import StreamingDataset as _Lit

    class LitdataPhotos(_Lit):
        """A litdata StreamingDataset whose samples are decoded and cropped."""

        def __init__(self, res, *a, **kw):
            super().__init__(*a, **kw)
            self.tf = transform(res)

        def __getitem__(self, i):
            s = super().__getitem__(i)
            return self.tf(decode(s["image"])), int(s["label"])
except ImportError:
    pass


def litdata_loader(args, data, names, weights):
    from litdata import CombinedStreamingDataset, StreamingDataLoader
    ds = CombinedStreamingDataset([LitdataPhotos(args.res, str(data / n), shuffle=True, seed=0) for n in names],
                                  weights=list(weights), iterate_over_all=False, seed=0)
    return StreamingDataLoader(ds, batch_size=args.batch_size, num_workers=args.workers, drop_last=True,
                               persistent_workers=args.workers > 0)
