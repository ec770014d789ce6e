"""Image-text datasets: TextField and its decoders, and the one-pass
conversions of webdataset shards (read in Go, local, over HTTP and from S3
on real servers on 127.0.0.1), Parquet files and Hugging Face datasets.

The shards hold crops of real photos (Debian wallpapers) written with the
webdataset package's own TarWriter; tokens are checked against
open_clip.tokenize itself."""
import io
import json
import os
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import FnDataset, collect, write

from ffcv_go import DatasetWriter, Loader, SampleError
from ffcv_go.fields import IntField, RGBImageField, TextField, JSONField
from ffcv_go.fields.decoders import (CaptionDecoder, IntDecoder, SimpleRGBImageDecoder, TokenDecoder)
from ffcv_go.loader import OrderOption

try:
    import open_clip
except ImportError:  # the tests without its tokenizer run without it
    open_clip = None
try:
    import webdataset as wds
except ImportError:  # the shards are written with its TarWriter
    wds = None
needs_open_clip = pytest.mark.skipif(open_clip is None, reason="open_clip is not installed (open_clip_torch)")

CAPTIONS = [
    "a photo of a garden",
    "Flowers, grass & trees!  Lots of them... (really)",
    "unicode: café ☕ naïve — “quoted” 東京",
    "a very long caption that keeps going " * 12,
    "",
    "123 456 7.89 don't won't it's",
]


def five(g):
    return [f"{CAPTIONS[(g + k) % len(CAPTIONS)]} #{k}" for k in range(5)]


def photos():
    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    import make_dataset
    found = make_dataset.find_photos()[:2]
    if not found:
        pytest.skip("no photos installed (Debian wallpaper packages)")
    from PIL import Image
    out = []
    for p in found:
        im = Image.open(p)
        im.draft("RGB", (im.width // 4, im.height // 4))
        out.append(im.convert("RGB"))
    return out


def image_bytes(srcs, g, fmt="JPEG"):
    src = srcs[g % len(srcs)]
    w, h = 90 + (g * 37) % 150, 70 + (g * 53) % 120
    x, y = (g * 41) % (src.width - w), (g * 29) % (src.height - h)
    b = io.BytesIO()
    src.crop((x, y, x + w, y + h)).save(b, fmt, quality=90) if fmt == "JPEG" else src.crop((x, y, x + w, y + h)).save(b, fmt)
    return b.getvalue()


N_SHARDS, PER_SHARD = 3, 8
N = N_SHARDS * PER_SHARD


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """N samples (image bytes, caption, label, five captions) and the same
    as webdataset shards: key.jpg (one PNG), key.txt, key.cls, key.json."""
    if wds is None:
        pytest.skip("webdataset is not installed (its TarWriter writes the shards)")
    srcs = photos()
    root = tmp_path_factory.mktemp("wds")
    samples = []
    for g in range(N):
        fmt = "PNG" if g == 5 else "JPEG"
        samples.append(dict(image=image_bytes(srcs, g, fmt), ext="png" if fmt == "PNG" else "jpg",
                            caption=CAPTIONS[g % len(CAPTIONS)], label=g % 4, captions=five(g)))
    shards = []
    for s in range(N_SHARDS):
        path = root / f"train-{s:04d}.tar"
        with wds.TarWriter(str(path)) as sink:
            for g in range(s * PER_SHARD, (s + 1) * PER_SHARD):
                x = samples[g]
                sink.write({"__key__": f"{g:06d}", x["ext"]: x["image"], "txt": x["caption"], "cls": x["label"],
                            "json": {"captions": x["captions"], "index": g}})
        shards.append(str(path))
    return samples, shards


def fields(tokenizer=None, **image):
    return {"image": RGBImageField(write_mode="jpg", max_resolution=96, **image),
            "caption": TextField(tokenizer), "label": IntField()}


def loader(path, **kw):
    kw.setdefault("order", OrderOption.SEQUENTIAL)
    kw.setdefault("drop_last", False)
    return Loader(str(path), batch_size=kw.pop("batch_size", 8), num_workers=kw.pop("num_workers", 2), **kw)


# ---- webdataset shards in Go ---------------------------------------------------

@needs_open_clip
def test_webdataset_tokens_equal_open_clip(data, tmp_path):
    samples, shards = data
    tok = open_clip.get_tokenizer("ViT-B-32")
    w = DatasetWriter(str(tmp_path / "t.beton"), fields(tok), num_workers=2, progress=False)
    rep = w.from_webdataset(shards, ignore=["json"])
    assert rep.files == [str(tmp_path / "t.beton")] and rep.samples == N and rep.num_problems == 0
    for ctx in (77, 16):
        l = loader(rep.files[0], pipelines={"caption": [TokenDecoder(ctx)], "label": [IntDecoder()], "image": None})
        got = torch.cat([t for t, _ in l])
        want = open_clip.tokenize([x["caption"] for x in samples], context_length=ctx)
        assert got.dtype == torch.int64 and torch.equal(got, want), ctx
    l = loader(rep.files[0], pipelines={"caption": [TokenDecoder(16, extra="lengths")], "image": None, "label": None})
    t = next(iter(l))[0]
    assert t.attention_mask is None and torch.equal(t.lengths, (t.ids != 0).sum(1))
    l = loader(rep.files[0], pipelines={"caption": [TokenDecoder(16, extra="attention_mask")], "image": None,
                                        "label": None})
    t = next(iter(l))[0]
    assert t.lengths is None and torch.equal(t.attention_mask, (t.ids != 0).long())
    l = loader(rep.files[0], pipelines={"caption": [CaptionDecoder()], "image": None, "label": None})
    assert [c for (b,) in l for c in b] == [x["caption"] for x in samples]


def test_webdataset_same_file_as_indexed_writer(data, tmp_path):
    """Images go from the tar to the encoder: the file is the one
    from_indexed_dataset writes from the same image bytes, whatever the
    number of workers and shards read ahead."""
    samples, shards = data
    want = write(tmp_path / "indexed.beton", fields(), [(x["image"], x["caption"], x["label"]) for x in samples],
                 num_workers=2).read_bytes()
    for workers, readers in ((1, 1), (3, 2)):
        out = tmp_path / f"w{workers}.beton"
        w = DatasetWriter(str(out), fields(), num_workers=workers, progress=False, page_size=2 << 20)
        w.from_webdataset(shards, ignore=["json"], readers=readers)
        assert out.read_bytes() == want, (workers, readers)


def test_webdataset_sharded_output(data, tmp_path):
    samples, shards = data
    pattern = str(tmp_path / "per" / "part-{:03d}.beton")
    rep = DatasetWriter(pattern, fields(), progress=False).from_webdataset(shards, ignore=["json"],
                                                                          output_shards="input")
    assert rep.files == [pattern.format(k) for k in range(N_SHARDS)] and rep.counts == [PER_SHARD] * N_SHARDS
    l = loader(None or rep.files[1], pipelines={"caption": [CaptionDecoder()], "image": None, "label": None})
    assert [c for (b,) in l for c in b] == [x["caption"] for x in samples[PER_SHARD:2 * PER_SHARD]]
    # Repacked by size, read back as one dataset through a directory of shards.
    rep = DatasetWriter(str(tmp_path / "sized"), fields(), progress=False, page_size=2 << 20).from_webdataset(
        shards, ignore=["json"], output_shards="4MB")
    assert sum(rep.counts) == N and all(os.path.basename(f).endswith(".beton") for f in rep.files)
    l = loader(str(tmp_path / "sized"), pipelines={"label": [IntDecoder()], "image": None, "caption": None})
    assert [int(x) for (b,) in l for x in b.reshape(-1)] == [x["label"] for x in samples]


@needs_open_clip
def test_caption_draw(data, tmp_path):
    """Five captions per image: one drawn per sample and epoch, keyed by
    (seed, epoch, position, operation): the same for any worker count,
    another next epoch, in time every one; the token rows are those of the
    captions drawn."""
    samples, shards = data
    tok = open_clip.get_tokenizer("ViT-B-32")
    w = DatasetWriter(str(tmp_path / "five.beton"), fields(tok), progress=False)
    w.from_webdataset(shards, extensions={"caption": "json:captions", "label": "json:index"}, ignore=["txt", "cls"])

    def epochs(decoder, workers, n, seed=3):
        l = loader(tmp_path / "five.beton", num_workers=workers, order=OrderOption.RANDOM, seed=seed,
                   pipelines={"caption": [decoder], "label": [IntDecoder()], "image": None})
        out = []
        for _ in range(n):
            out.append([(int(g), c) for caps, index in l for c, g in zip(caps, index.reshape(-1))])
        return out
    one = epochs(CaptionDecoder(), 1, 12)
    assert epochs(CaptionDecoder(), 3, 12) == one
    assert [c for _, c in one[0]] != [c for _, c in one[1]]
    drawn = {g: set() for g in range(N)}
    for epoch in one:
        assert sorted(g for g, _ in epoch) == list(range(N))
        for g, c in epoch:
            assert c in samples[g]["captions"], (g, c)
            drawn[g].add(c)
    assert sum(len(d) for d in drawn.values()) >= 4 * N, drawn  # 12 draws of 5 reach nearly all
    other = epochs(CaptionDecoder(), 2, 2, seed=4)  # another seed draws apart
    assert [dict(e) for e in other] != [dict(e) for e in one[:2]]
    tokens = epochs(TokenDecoder(77), 2, 3)
    for caps, toks in zip(one, tokens):
        want = open_clip.tokenize([c for _, c in caps])
        assert torch.equal(torch.stack([t for _, t in toks]), want)


def test_webdataset_over_http(data, tmp_path):
    from test_remote import RangeHandler, serve, stop
    samples, shards = data
    handler = type("Handler", (RangeHandler,), {"root": str(Path(shards[0]).parent)})
    srv, url = serve(handler)
    try:
        urls = [f"{url}/{Path(s).name}" for s in shards]
        rep = DatasetWriter(str(tmp_path / "http.beton"), fields(), progress=False).from_webdataset(urls,
                                                                                                  ignore=["json"])
        local = DatasetWriter(str(tmp_path / "local.beton"), fields(), progress=False).from_webdataset(
            shards, ignore=["json"])
        assert Path(rep.files[0]).read_bytes() == Path(local.files[0]).read_bytes()
        with pytest.raises(FileNotFoundError, match="missing.tar"):
            DatasetWriter(str(tmp_path / "m.beton"), fields(), progress=False).from_webdataset(
                [urls[0], f"{url}/missing.tar"], ignore=["json"])
        assert not (tmp_path / "m.beton").exists()
    finally:
        stop(srv)


from test_remote import MOTO, moto, s3  # noqa: E402,F401 - the S3 server fixtures


@pytest.mark.skipif(not MOTO.exists(), reason="moto[server] is not installed (make venv)")
def test_webdataset_from_s3(data, tmp_path, s3):
    from test_remote import BUCKET
    samples, shards = data
    for s in shards:
        s3.upload_file(s, BUCKET, f"wds/{Path(s).name}")
    out = f"s3://{BUCKET}/out/train-{{:02d}}.beton"
    rep = DatasetWriter(out, fields(), progress=False).from_webdataset(f"s3://{BUCKET}/wds/train-*.tar",
                                                                       ignore=["json"], output_shards="input")
    assert rep.files == [out.format(k) for k in range(N_SHARDS)]
    l = loader(None or f"s3://{BUCKET}/out/", pipelines={"caption": [CaptionDecoder()], "image": None, "label": None})
    assert [c for (b,) in l for c in b] == [x["caption"] for x in samples]


def _tar(path, members):
    with tarfile.open(path, "w") as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return str(path)


def test_bad_members_name_shard_and_key(data, tmp_path):
    samples, shards = data
    jpg = samples[0]["image"]
    cases = {
        "corrupt JPEG": ([("a.jpg", jpg[:300] + b"\x00" * 400), ("a.txt", b"x"), ("a.cls", b"1")], 'sample "a"'),
        "missing caption": ([("b.jpg", jpg), ("b.cls", b"1")], 'sample "b": no txt member for field "caption"'),
        "unknown extension": ([("c.jpg", jpg), ("c.txt", b"x"), ("c.cls", b"1"), ("c.mp4", b"?")],
                              "member 'c.mp4'|member \"c.mp4\""),
        "bad label": ([("d.jpg", jpg), ("d.txt", b"x"), ("d.cls", b"one")], "not an integer"),
    }
    for name, (members, want) in cases.items():
        bad = _tar(tmp_path / f"{name.replace(' ', '_')}.tar", members)
        with pytest.raises(SampleError, match=want) as e:
            DatasetWriter(str(tmp_path / "x.beton"), fields(), progress=False).from_webdataset(
                [shards[0], bad], ignore=["json"])
        assert bad in str(e.value), name
        assert not (tmp_path / "x.beton").exists()
        with pytest.warns(UserWarning, match="problems"):
            rep = DatasetWriter(str(tmp_path / "skip.beton"), fields(), progress=False).from_webdataset(
                [shards[0], bad], ignore=["json"], errors="skip")
        p = rep.problems[0]
        assert p["shard"] == bad and p["key"] in "abcd", p
        kept = 1 if name == "unknown extension" else 0
        assert rep.samples == PER_SHARD + kept and rep.skipped == 1 - kept, (name, rep)
    with open(shards[1], "rb") as f:
        cut = f.read()[:15000]
    bad = tmp_path / "cut.tar"
    bad.write_bytes(cut)
    with pytest.raises(SampleError, match=r"cut\.tar.*truncated|cut\.tar.*no end-of-archive"):
        DatasetWriter(str(tmp_path / "y.beton"), fields(), progress=False).from_webdataset([str(bad)], ignore=["json"])


def test_cut_shard_reports_the_lost_sample(data, tmp_path):
    samples, shards = data
    whole = Path(shards[1]).read_bytes()
    at = whole.index(b"000010.jpg") + 512 + 100  # into sample 10's image: 8 and 9 are whole
    bad = tmp_path / "cut.tar"
    bad.write_bytes(whole[:at])
    with pytest.warns(UserWarning, match=r"1 problems, 1 samples skipped.*sample '000010', member '000010\.jpg'"):
        rep = DatasetWriter(str(tmp_path / "c.beton"), fields(), progress=False).from_webdataset(
            [str(bad)], ignore=["json"], errors="skip")
    assert rep.samples == 2 and rep.skipped == 1, rep
    p = rep.problems[0]
    assert p["shard"] == str(bad) and p["key"] == "000010" and p["member"] == "000010.jpg", p
    assert p["sample_skipped"] and "truncated" in p["reason"] and "000010" not in p["reason"], p
    assert set(p) == {"shard", "key", "member", "reason", "sample_skipped"}


def test_shard_problems_name_the_url_once(data, tmp_path):
    import http.server
    from test_remote import RangeHandler, serve, stop
    samples, shards = data
    root = str(Path(shards[0]).parent)

    class NoRange(http.server.BaseHTTPRequestHandler):
        """Answers every GET with the whole file: no byte ranges."""
        def log_message(self, *args):
            pass

        def do_GET(self):
            b = (Path(root) / self.path.lstrip("/")).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            try:
                self.wfile.write(b)
            except ConnectionError:
                pass  # the client hangs up once it sees the 200

    ranged, url = serve(type("Handler", (RangeHandler,), {"root": root}))
    plain, plain_url = serve(NoRange)
    try:
        for bad, exc, want in [(f"{url}/missing.tar", FileNotFoundError, "HTTP 404"),
                               (f"{plain_url}/{Path(shards[0]).name}", OSError, "byte ranges")]:
            w = DatasetWriter(str(tmp_path / "s.beton"), fields(), progress=False)
            with pytest.raises(exc, match=want) as e:
                w.from_webdataset([f"{url}/{Path(shards[1]).name}", bad], ignore=["json"])
            msg = str(e.value)
            assert msg.startswith("bad shard: ") and msg.count(bad) == 1, msg
            with pytest.warns(UserWarning, match=r"shard problem"):
                rep = w.from_webdataset([f"{url}/{Path(shards[1]).name}", bad], ignore=["json"], errors="skip")
            assert rep.samples == PER_SHARD and rep.skipped == 0 and rep.num_problems == 1, rep
            p = rep.problems[0]
            assert p["shard"] == bad and p["key"] is None and p["member"] is None and not p["sample_skipped"], p
            assert want in p["reason"] and bad not in p["reason"], p
    finally:
        stop(ranged)
        stop(plain)
    not_tar = tmp_path / "not-a.tar"
    not_tar.write_bytes(b"hello world " * 100)
    with pytest.raises(SampleError, match=r"^bad shard: .*not-a\.tar: at the start|^bad shard: .*not-a\.tar: not a readable tar"):
        DatasetWriter(str(tmp_path / "n.beton"), fields(), progress=False).from_webdataset([str(not_tar)], ignore=["json"])


def test_same_problem_grouped(data, tmp_path):
    samples, shards = data
    # Captions from JSON while the shards also carry .txt: one problem per sample, one group.
    w = DatasetWriter(str(tmp_path / "g.beton"), {"image": RGBImageField(write_mode="jpg", max_resolution=96),
                                                 "caption": TextField(), "label": IntField()}, progress=False)
    with pytest.warns(UserWarning) as warned:
        rep = w.from_webdataset(shards, extensions={"caption": "json:captions"}, errors="skip")
    assert rep.samples == N and rep.num_problems == N and len(rep.problems) == N
    assert len(rep.problem_groups) == 1, rep.problem_groups
    g = rep.problem_groups[0]
    assert g["count"] == N and not g["sample_skipped"] and 'extension "txt"' in g["reason"], g
    assert [x["key"] for x in g["examples"]] == ["000000", "000001", "000002"], g
    assert [x["member"] for x in g["examples"]] == ["000000.txt", "000001.txt", "000002.txt"], g
    msg = str(warned[0].message)
    assert f'{N} x ' in msg and "000000" in msg and msg.count("extension") == 1, msg
    assert f"{N} x " in str(rep) and "000001" in str(rep), str(rep)


def test_bad_arguments(data, tmp_path):
    samples, shards = data
    w = DatasetWriter(str(tmp_path / "z.beton"), fields(), progress=False)
    with pytest.raises(ValueError, match="numbered name"):
        w.from_webdataset(shards, output_shards="input")
    with pytest.raises(ValueError, match="pass output_shards"):
        DatasetWriter(str(tmp_path / "z-{:03d}.beton"), fields(), progress=False).from_webdataset(shards)
    with pytest.raises(ValueError, match="size"):
        DatasetWriter(str(tmp_path / "z-{:03d}.beton"), fields(), progress=False).from_webdataset(
            shards, output_shards="lots")
    with pytest.raises(ValueError, match="not fields"):
        w.from_webdataset(shards, extensions={"nope": "txt"})
    with pytest.raises(ValueError, match="errors"):
        w.from_webdataset(shards, errors="ignore")
    with pytest.raises(ValueError, match="pipeline"):
        w.from_webdataset(shards, lambda ds: ds, extensions={"caption": "txt"})
    with pytest.raises(FileNotFoundError):
        w.from_webdataset(str(tmp_path / "nothing-*.tar"))


# ---- Arrow: Parquet and Hugging Face ----------------------------------------------

def _table(samples, hf_images=False):
    import pyarrow as pa
    images = [x["image"] for x in samples]
    image = (pa.array([{"bytes": b, "path": None} for b in images],
                      pa.struct([("bytes", pa.binary()), ("path", pa.string())])) if hf_images
             else pa.array(images, pa.binary()))
    return pa.table({"image": image, "text": [x["caption"] for x in samples],
                     "captions": [x["captions"] for x in samples],
                     "label": pa.array([x["label"] for x in samples], pa.int32()),
                     "key": [f"{g:06d}" for g in range(len(samples))]})


@needs_open_clip
def test_parquet_same_file_as_webdataset(data, tmp_path):
    import pyarrow.parquet as pq
    samples, shards = data
    tok = open_clip.get_tokenizer("ViT-B-32")
    t = _table(samples)
    files = []
    for k in range(N_SHARDS):
        files.append(str(tmp_path / f"part-{k}.parquet"))
        pq.write_table(t.slice(k * PER_SHARD, PER_SHARD), files[-1], row_group_size=5)
    want = DatasetWriter(str(tmp_path / "wds.beton"), fields(tok), progress=False).from_webdataset(
        shards, ignore=["json"])
    rep = DatasetWriter(str(tmp_path / "pq.beton"), fields(tok), progress=False).from_parquet(
        files, columns={"caption": "text"}, batch_size=7)
    assert rep.samples == N
    assert Path(rep.files[0]).read_bytes() == Path(want.files[0]).read_bytes()
    # Five captions from a list column, sharded per file.
    rep = DatasetWriter(str(tmp_path / "five-{}.beton"), fields(tok), progress=False).from_parquet(
        str(tmp_path / "part-*.parquet"), columns={"caption": "captions"}, output_shards="input")
    assert rep.counts == [PER_SHARD] * N_SHARDS
    l = loader(rep.files[2], pipelines={"caption": [CaptionDecoder()], "label": [IntDecoder()], "image": None})
    for caps, _ in l:
        for c, x in zip(caps, samples[2 * PER_SHARD:]):
            assert c in x["captions"]


def test_parquet_nulls_and_keys(data, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    samples, _ = data
    t = _table(samples[:6])
    text = pa.array([x["caption"] if g != 3 else None for g, x in enumerate(samples[:6])])
    t = t.set_column(t.schema.get_field_index("text"), "text", text)
    pq.write_table(t, tmp_path / "n.parquet")
    with pytest.raises(SampleError, match=r'n\.parquet: sample "000003": field "caption": no caption'):
        DatasetWriter(str(tmp_path / "n.beton"), fields(), progress=False).from_parquet(
            str(tmp_path / "n.parquet"), columns={"caption": "text"}, key="key")
    with pytest.warns(UserWarning):
        rep = DatasetWriter(str(tmp_path / "n.beton"), fields(), progress=False).from_parquet(
            str(tmp_path / "n.parquet"), columns={"caption": "text"}, errors="skip")
    assert rep.samples == 5 and rep.problems[0]["key"] == "row 3"
    with pytest.raises(ValueError, match="no column 'nope'"):
        DatasetWriter(str(tmp_path / "n.beton"), fields(), progress=False).from_parquet(
            str(tmp_path / "n.parquet"), columns={"caption": "nope"})
    with pytest.raises(TypeError, match="not binary or strings"):
        DatasetWriter(str(tmp_path / "n.beton"), fields(), progress=False).from_parquet(
            str(tmp_path / "n.parquet"), columns={"caption": "label"})


@needs_open_clip
def test_huggingface_dataset(data, tmp_path):
    datasets = pytest.importorskip("datasets")
    samples, shards = data
    tok = open_clip.get_tokenizer("ViT-B-32")
    t = _table(samples, hf_images=True)
    features = datasets.Features({"image": datasets.Image(), "text": datasets.Value("string"),
                                  "captions": datasets.Sequence(datasets.Value("string")),
                                  "label": datasets.Value("int32"), "key": datasets.Value("string")})
    ds = datasets.Dataset(t.cast(features.arrow_schema), info=datasets.DatasetInfo(features=features))
    want = DatasetWriter(str(tmp_path / "wds.beton"), fields(tok), progress=False).from_webdataset(
        shards, ignore=["json"])
    rep = DatasetWriter(str(tmp_path / "hf.beton"), fields(tok), progress=False).from_huggingface(
        ds, columns={"caption": "text"}, batch_size=10)
    assert Path(rep.files[0]).read_bytes() == Path(want.files[0]).read_bytes()
    # Shuffled (an indices mapping over the table): rows in the dataset's order.
    order = list(np.random.default_rng(0).permutation(N))
    rep = DatasetWriter(str(tmp_path / "shuf.beton"), fields(), progress=False).from_huggingface(
        ds.select(order), columns={"caption": "text"})
    l = loader(rep.files[0], pipelines={"label": [IntDecoder()], "caption": [CaptionDecoder()], "image": None})
    assert [c for caps, _ in l for c in caps] == [samples[g]["caption"] for g in order]
    # Images given by their path only (as the imagefolder builder stores them).
    paths = []
    for g in range(4):
        paths.append(str(tmp_path / f"{g}.jpg"))
        Path(paths[-1]).write_bytes(samples[g]["image"])
    by_path = datasets.Dataset.from_dict({"image": paths, "text": [x["caption"] for x in samples[:4]],
                                          "label": [x["label"] for x in samples[:4]]},
                                         features=datasets.Features({"image": datasets.Image(),
                                                                     "text": datasets.Value("string"),
                                                                     "label": datasets.Value("int64")}))
    rep = DatasetWriter(str(tmp_path / "paths.beton"), fields(), progress=False, page_size=2 << 20).from_huggingface(
        by_path, columns={"caption": "text"})
    want = write(tmp_path / "paths-indexed.beton", fields(),
                 [(x["image"], x["caption"], x["label"]) for x in samples[:4]])
    assert Path(rep.files[0]).read_bytes() == want.read_bytes()
    with pytest.raises(TypeError, match="pick a split"):
        DatasetWriter(str(tmp_path / "d.beton"), fields(), progress=False).from_huggingface(
            datasets.DatasetDict({"train": ds}))


# ---- TextField through from_indexed_dataset --------------------------------------------

@needs_open_clip
def test_text_field_indexed(tmp_path):
    tok = open_clip.tokenizer.SimpleTokenizer()
    items = [(["first caption", "second one"], 0), ("only one", 1), ("", 2)]
    path = write(tmp_path / "i.beton", {"caption": TextField(tok), "label": IntField()}, items)
    (toks, lab), = collect(loader(path, pipelines={"caption": [TokenDecoder(10)]}))
    assert np.array_equal(toks[1], open_clip.tokenize(["only one"], 10)[0].numpy())
    assert any(np.array_equal(toks[0], open_clip.tokenize([c], 10)[0].numpy()) for c in items[0][0])
    # A plain TextField: raw strings only.
    path = write(tmp_path / "p.beton", {"caption": TextField()}, [(c,) for c, _ in items])
    (caps,), = collect(loader(path, pipelines={"caption": [CaptionDecoder(max_bytes=5)]}))
    assert caps[1] == "only " and caps[2] == ""
    with pytest.raises(ValueError, match="stores no tokens"):
        loader(path, pipelines={"caption": [TokenDecoder()]})
    for bad, err in (([], ValueError), (3, TypeError), ([b"\xff"], SampleError)):
        with pytest.raises(err):
            write(tmp_path / "b.beton", {"caption": TextField()}, [(bad,)])


def test_corrupt_caption_is_reported(tmp_path):
    """Caption bytes damaged in the file: Reader.verify names the sample and
    field, and the loader raises a SampleError instead of handing out garbage."""
    from ffcv_go.reader import Reader
    path = write(tmp_path / "c.beton", {"caption": TextField(), "label": IntField()},
                 [(f"caption number {i} here", i) for i in range(6)])
    data = bytearray(path.read_bytes())
    at = data.find(b"caption number 3 here")
    data[at + 8] = 0xFF
    path.write_bytes(bytes(data))
    r = Reader(str(path))
    problems = r.verify()
    r.close()
    assert [(p["sample"], p["field"]) for p in problems] == [(3, "caption")] and "UTF-8" in problems[0]["error"]
    with pytest.raises(SampleError, match=r"sample 3.*UTF-8"):
        collect(loader(path, pipelines={"caption": [CaptionDecoder()]}))


def test_huggingface_tokenizer(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "red", "house", "big"])}
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    f = TextField(tk)
    assert (f.sot, f.eot, f.pad, f.vocab_size) == (2, 3, 0, 8)
    path = write(tmp_path / "hf.beton", {"caption": f}, [("a red house",), ("a big big big red house",)])
    (toks,), = collect(loader(path, pipelines={"caption": [TokenDecoder(6)]}))
    assert toks.tolist() == [[2, 4, 5, 6, 3, 0], [2, 4, 7, 7, 7, 3]]
    # A plain callable, with the special tokens given.
    f = TextField(lambda s: [len(w) for w in s.split()], sot=90, eot=91, vocab_size=100)
    path = write(tmp_path / "fn.beton", {"caption": f}, [("aa bbb c",)])
    (toks,), = collect(loader(path, pipelines={"caption": [TokenDecoder(6, dtype=torch.int32)]}))
    assert toks.dtype == np.int32 and toks.tolist() == [[90, 2, 3, 1, 91, 0]]
    with pytest.raises(ValueError, match="vocabulary"):
        TextField(lambda s: [], eot=100, vocab_size=100)


def test_runs_without_open_clip_and_webdataset(tmp_path):
    """Without open_clip and webdataset only the tests that need them skip."""
    import subprocess
    import ffcv_go
    for name in ("open_clip", "webdataset"):
        blocked = tmp_path / "blocked" / name
        blocked.mkdir(parents=True)
        (blocked / "__init__.py").write_text(f"raise ImportError('{name} is blocked for this test')\n")
    path = os.pathsep.join([str(tmp_path / "blocked"), str(Path(ffcv_go.__file__).parents[1])])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                        "-k", "corrupt_caption_is_reported or text_field_indexed or test_bad_arguments"],
                       env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True, timeout=300)
    assert "1 passed, 2 skipped" in r.stdout, r.stdout[-2000:]
