"""DatasetWriter.from_streaming and from_litdata: MosaicML Streaming (MDS)
and litdata datasets read in Go (core/mds, core/litdata) and written in one
pass. The datasets under tests/fixtures/peers were written by the tools
themselves (make_fixtures.py beside them, which reads them back with the
tools); test_fixtures_are_what_the_tools_write writes them afresh with the
tools, when build/peers-venv has them, and converts those."""
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ffcv_go import DatasetWriter, Loader
from ffcv_go.fields import BytesField, FloatField, IntField, RGBImageField, TextField
from ffcv_go.fields.decoders import CaptionDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.reader import Reader

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "tests" / "fixtures" / "peers"
PEERS_PYTHON = ROOT / "build" / "peers-venv" / "bin" / "python"
TRUTH = json.loads((PEERS / "truth.json").read_text())
DATASETS = [("mds", "mds"), ("mds-zstd", "mds"), ("mds-gz", "mds"), ("litdata", "litdata"),
            ("litdata-zstd", "litdata"), ("litdata-zstd-chunk", "litdata"), ("litdata-zstd-sample", "litdata")]


def fields(**image):
    image.setdefault("write_mode", "jpg")
    return {"image": RGBImageField(keep_source_jpeg=True, **image), "target": IntField(),
            "caption": TextField(), "raw": BytesField()}


def convert(root, fmt, out, flds=None, **kw):
    w = DatasetWriter(str(out), flds or fields(), progress=False)
    kw.setdefault("columns", {"target": "label"})
    return (w.from_streaming if fmt == "mds" else w.from_litdata)(root, **kw)


def captions(path):
    loader = Loader(str(path), batch_size=4, num_workers=1, order=OrderOption.SEQUENTIAL, drop_last=False,
                    pipelines={"caption": [CaptionDecoder()], "image": None, "target": None, "raw": None})
    return [c for (b,) in loader for c in b]


def check(path, want=TRUTH):
    """The file holds every sample as given to the tool: the JPEG file byte
    for byte (it needs no resize), the label, the caption, the bytes."""
    r = Reader(str(path))
    assert r.num_samples == len(want)
    for i, w in enumerate(want):
        assert hashlib.sha256(bytes(r.read(i, "image"))).hexdigest() == w["jpeg_sha256"], i
        assert bytes(r.read(i, "raw")).hex() == w["raw"]
        assert [int(r.metadata["f0"][i]["height"]), int(r.metadata["f0"][i]["width"])] == w["size"]
    assert r.metadata["f1"].tolist() == [w["label"] for w in want]
    assert captions(path) == [w["caption"] for w in want]


@pytest.mark.parametrize("name,fmt", DATASETS)
def test_converts_what_the_tool_wrote(tmp_path, name, fmt):
    rep = convert(PEERS / name, fmt, tmp_path / "out.beton")
    assert rep.samples == len(TRUTH) and rep.skipped == 0 and rep.files == [str(tmp_path / "out.beton")]
    check(tmp_path / "out.beton")


def test_per_shard_files_resizes_and_other_columns(tmp_path):
    """output_shards='input': a file per MDS shard, the same samples; an
    image past max_resolution is re-encoded smaller; a float32 column into
    a FloatField, a PNG column into an RGBImageField."""
    rep = convert(PEERS / "mds", "mds", tmp_path / "out", output_shards="input")
    shards = json.loads((PEERS / "mds" / "index.json").read_text())["shards"]
    assert rep.counts == [s["samples"] for s in shards] and len(shards) > 2
    one = convert(PEERS / "mds", "mds", tmp_path / "one.beton")
    joined = Reader(str(tmp_path / "out"))
    assert [bytes(joined.read(i, "image")) for i in range(len(TRUTH))] == \
        [bytes(Reader(one.files[0]).read(i, "image")) for i in range(len(TRUTH))]
    flds = {"image": RGBImageField(write_mode="jpg", max_resolution=24, keep_source_jpeg=True),
            "png": RGBImageField(write_mode="raw"), "score": FloatField()}
    convert(PEERS / "mds", "mds", tmp_path / "small.beton", flds, columns={})
    r = Reader(str(tmp_path / "small.beton"))
    for i, w in enumerate(TRUTH):
        assert max(int(r.metadata["f0"][i]["height"]), int(r.metadata["f0"][i]["width"])) == 24
        assert hashlib.sha256(bytes(r.read(i, "image"))).hexdigest() != w["jpeg_sha256"]
        assert [int(r.metadata["f1"][i]["height"]), int(r.metadata["f1"][i]["width"])] == w["png_size"]
    assert r.metadata["f2"].tolist() == [w["score"] for w in TRUTH]


def test_bad_mappings_and_datasets(tmp_path):
    with pytest.raises(ValueError, match=r"shard\.00000\.mds: field \"target\": no column \"target\" \(columns: "
                                         r"caption, image, label, png, raw, score\)"):
        convert(PEERS / "mds", "mds", tmp_path / "a.beton", columns={})
    with pytest.raises(ValueError, match=r"column \"caption\" holds str, which an IntField cannot take"):
        convert(PEERS / "litdata", "litdata", tmp_path / "a.beton", columns={"target": "caption"})
    with pytest.raises(ValueError, match="columns names nope, not fields of this writer"):
        convert(PEERS / "mds", "mds", tmp_path / "a.beton", columns={"nope": "label"})
    with pytest.raises(FileNotFoundError, match="an MDS dataset's index"):
        convert(tmp_path / "nothing", "mds", tmp_path / "a.beton")
    with pytest.raises(ValueError, match="not a litdata index"):
        convert(PEERS / "mds", "litdata", tmp_path / "a.beton")
    broken = tmp_path / "broken"
    shutil.copytree(PEERS / "mds", broken)
    shard = broken / "shard.00001.mds"
    shard.write_bytes(shard.read_bytes()[:600])
    with pytest.raises(ValueError, match=r"shard\.00001\.mds: .*runs past|shard\.00001\.mds: .*bytes \["):
        convert(broken, "mds", tmp_path / "a.beton")
    assert not (tmp_path / "a.beton").exists()
    with pytest.warns(UserWarning, match="samples skipped"):
        rep = convert(broken, "mds", tmp_path / "a.beton", errors="skip")
    assert rep.samples == len(TRUTH) - 2 and "shard.00001.mds" in rep.problems[0]["shard"]


def test_over_http(tmp_path):
    from test_remote import RangeHandler, serve, stop
    srv, url = serve(type("Handler", (RangeHandler,), {"root": str(PEERS)}))
    try:
        convert(f"{url}/litdata", "litdata", tmp_path / "l.beton")
        check(tmp_path / "l.beton")
        with pytest.raises(FileNotFoundError, match="a litdata dataset's index"):
            convert(f"{url}/missing", "litdata", tmp_path / "m.beton")
    finally:
        stop(srv)


from test_remote import MOTO, moto, s3  # noqa: E402,F401 - the S3 server fixtures


@pytest.mark.skipif(not MOTO.exists(), reason="moto[server] is not installed (make venv)")
def test_from_s3_prefix_without_a_slash(tmp_path, s3):
    """s3://bucket/prefix as Streaming and litdata users write it: the
    dataset is read from it, and a Loader reads the .beton files written
    under another such prefix."""
    from test_remote import BUCKET
    for f in (PEERS / "mds-zstd").iterdir():
        s3.upload_file(str(f), BUCKET, f"streaming/train/{f.name}")
    out = f"s3://{BUCKET}/converted/train-{{:02d}}.beton"
    rep = convert(f"s3://{BUCKET}/streaming/train", "mds", out, output_shards="input")
    assert rep.files == [out.format(k) for k in range(len(rep.counts))] and len(rep.counts) > 2
    loader = Loader(f"s3://{BUCKET}/converted", batch_size=4, num_workers=1, order=OrderOption.SEQUENTIAL,
                    drop_last=False, pipelines={"caption": [CaptionDecoder()], "image": None, "target": None,
                                                "raw": None})
    assert [c for (b,) in loader for c in b] == [w["caption"] for w in TRUTH]
    with pytest.raises(FileNotFoundError, match=r"objects exist under s3://.*/streaming/: a directory is named with "
                                                r"its trailing slash"):
        Loader(f"s3://{BUCKET}/streaming", batch_size=4)


@pytest.mark.skipif(not PEERS_PYTHON.exists(), reason="the peers venv (MosaicML Streaming, litdata) is not built: "
                                                      "make build/peers-venv/.installed")
def test_fixtures_are_what_the_tools_write(tmp_path):
    """The tools as pinned (requirements-mixture-peers.txt) write the
    datasets afresh, read them back themselves (make_fixtures.py checks),
    and the converters read the same samples from them."""
    proc = subprocess.run([str(PEERS_PYTHON), str(PEERS / "make_fixtures.py"), str(tmp_path / "fresh")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "fresh" / "truth.json").read_text()) == TRUTH
    for name, fmt in DATASETS:
        convert(tmp_path / "fresh" / name, fmt, tmp_path / f"{name}.beton")
        check(tmp_path / f"{name}.beton")


def _doc_block(marker):
    """The python block after marker in docs/guides/mixtures.md."""
    text = (ROOT / "docs" / "guides" / "mixtures.md").read_text()
    after = text[text.index(marker):]
    return after[after.index("```python\n") + len("```python\n"):after.index("\n```", after.index("```python"))]


@pytest.mark.parametrize("marker,dataset,url,out", [
    ("test_streaming_litdata.py, on tests/fixtures/peers/mds", "mds", "s3://bucket/web", "s3://bucket/converted/web-{:05d}.beton"),
    ("test_streaming_litdata.py, on tests/fixtures/peers/litdata", "litdata", "s3://bucket/a", "/data/a.beton"),
])
def test_the_guides_conversions_run(tmp_path, capsys, marker, dataset, url, out):
    """The guide's conversions as written, on the fixtures instead of its URLs."""
    code = _doc_block(marker)
    assert url in code and out in code
    dest = tmp_path / ("out-{:05d}.beton" if "{" in out else "a.beton")
    exec(code.replace(url, str(PEERS / dataset)).replace(out, str(dest)), {})
    printed = capsys.readouterr().out
    assert printed.startswith(f"{len(TRUTH)} samples")
    files = sorted(tmp_path.glob("*.beton"))
    assert sum(Reader(str(f)).num_samples for f in files) == len(TRUTH)
