"""Every ```python block of README.md, docs/getting-started.md,
docs/migrating.md and docs/guides/*.md runs, as written, on small real data.

A page's blocks are fragments of one program: they run in order in one
namespace, in a fresh working directory that holds the files they name
(DATA). A comment right above a block (blank lines between allowed) says
when it cannot run here:

    <!-- skip: reason -->     never here: a cluster, a remote bucket, another library's API
    <!-- needs: cuda -->      runs where torch sees a GPU, is skipped elsewhere
    <!-- run by: FILE, ... -->  tests/python/FILE runs it on data of its own (it
                              must exist and name the page); skipped here

Each block is its own test, so skips are counted and reported by pytest
(``-rs`` lists their reasons), and test_skips_are_few keeps their number in
check.

What the pages take as given, defined before their first block (GIVEN):
``dataset`` (torchvision's ImageFolder over the tiny folder), ``pipelines``
(a crop, flip and label pipeline) and the detection page's ``items``
(scenes of painted objects over real photos). SWAPS maps paths in the
blocks to paths of the fixture directory; the data is small enough
(512 images of 64 px, two 8-frame clips) that every block runs as written.
"""
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).parents[2]
sys.path.insert(0, str(REPO / "bench"))

PAGES = [REPO / "README.md", REPO / "docs/getting-started.md", REPO / "docs/migrating.md",
         *sorted((REPO / "docs/guides").glob("*.md"))]

# Paths written in the blocks -> paths in the fixture directory (none yet:
# every block that runs names relative paths the fixture directory has).
SWAPS = {}

MARK = re.compile(r"<!--\s*(skip|needs|run by):\s*(.*?)\s*-->")


def blocks(page):
    """[(index, code, marker kind or None, its text)] of the page's ```python blocks."""
    out, lines = [], page.read_text().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            j = i + 1
            while lines[j].strip() != "```":
                j += 1
            code = "\n".join(lines[i + 1:j])
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            m = MARK.fullmatch(lines[k].strip()) if k >= 0 else None
            out.append((len(out) + 1, code, m and m.group(1), m and m.group(2)))
            i = j
        i += 1
    return out


def _rel(page):
    return str(page.relative_to(REPO))


CASES = [(page, *b) for page in PAGES for b in blocks(page)]


# ---- the data the blocks name ----------------------------------------------

def _photos(n, side=64):
    """n crops of real photos, side x side RGB."""
    import make_dataset
    from PIL import Image
    sources = []
    for path in make_dataset.find_photos()[:4]:
        with Image.open(path) as im:
            im.draft("RGB", (320, 320))
            sources.append(np.asarray(im.convert("RGB").resize((256, 192))))
    rng = np.random.default_rng(0)
    out = []
    for k in range(n):
        src = sources[k % len(sources)]
        y, x = int(rng.integers(0, 192 - side)), int(rng.integers(0, 256 - side))
        out.append(np.ascontiguousarray(src[y:y + side, x:x + side]))
    return out


def _clip(path, frames=8, size=(48, 64), rate=8):
    import av
    g = np.random.default_rng(len(str(path)))
    codec = "libvpx" if str(path).endswith(".webm") else "libx264"
    with av.open(str(path), "w") as c:
        s = c.add_stream(codec, rate=rate)
        s.height, s.width = size
        s.pix_fmt = "yuv420p"
        base = g.integers(0, 256, (*size, 3), dtype=np.uint8)
        for t in range(frames):
            for p in s.encode(av.VideoFrame.from_ndarray(np.roll(base, 3 * t, axis=1), format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The files the blocks name: imagenet/train (an ImageFolder of 512
    photos in 2 classes), train.beton and val.beton written from it, and
    the video page's clips."""
    from PIL import Image
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import IntField, RGBImageField
    root = tmp_path_factory.mktemp("guides")
    for k, img in enumerate(_photos(512)):
        d = root / "imagenet/train" / ("cat", "dog")[k % 2]
        d.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img).save(d / f"{k:04d}.jpg", quality=90)
    for name in ("train.beton", "val.beton"):
        DatasetWriter(str(root / name), {"image": RGBImageField(write_mode="jpg"), "label": IntField()},
                      progress=False).from_image_folder(str(root / "imagenet/train"))
    for clip in ("clips/run/0001.mp4", "clips/jump/0002.webm"):
        (root / clip).parent.mkdir(parents=True, exist_ok=True)
        _clip(root / clip)
    return root


def _given(page, data):
    """The names a page takes as the reader's own (see the module's docstring)."""
    from torchvision.datasets import ImageFolder
    from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
    from ffcv_go.transforms import RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage
    g = {"__name__": "__guide__",
         "dataset": ImageFolder(str(data / "imagenet/train")),
         "pipelines": {"image": [RandomResizedCropRGBImageDecoder((64, 64)), RandomHorizontalFlip(), ToTensor(),
                                 ToTorchImage()],
                       "label": [IntDecoder(), ToTensor(), Squeeze()]}}
    if page.name == "detection.md":
        import scenes
        import make_dataset
        g["items"] = scenes.SceneDataset(16, make_dataset.find_photos()[:2], height=96, width=128)
    return g


_pages = {}  # page -> [namespace, working directory, blocks run so far, failed block or None]


def _run(page, index, code, state):
    """Runs block index of page in the page's namespace and directory."""
    namespace, work = state[0], state[1]
    for old, new in SWAPS.items():
        code = code.replace(old, new)
    cwd = os.getcwd()
    os.chdir(work)
    try:
        exec(compile(code, f"{_rel(page)} block {index}", "exec"), namespace)
    except BaseException:
        state[3] = index
        raise
    finally:
        os.chdir(cwd)
        state[2] = index


def _runs_here(kind, why):
    return kind is None or kind == "needs" and why == "cuda" and torch.cuda.is_available()


@pytest.mark.parametrize("page,index,code,kind,why", CASES,
                         ids=[f"{_rel(p)}#{i}" for p, i, *_ in CASES])
def test_block_runs(page, index, code, kind, why, data, tmp_path_factory, monkeypatch):
    if kind == "skip":
        pytest.skip(why)
    if kind == "run by":
        runner = Path(__file__).parent / why.split(",")[0].strip()
        assert runner.is_file() and page.name in runner.read_text(), \
            f"{_rel(page)} block {index}: {runner.name} does not exist or does not read {page.name}"
        pytest.skip(f"run by {runner.name}")
    if kind == "needs":
        if why != "cuda":
            pytest.fail(f"{_rel(page)} block {index}: unknown need {why!r}")
        if not torch.cuda.is_available():
            pytest.skip("needs CUDA")
    if page not in _pages:
        work = tmp_path_factory.mktemp(page.stem)
        for entry in data.iterdir():
            (work / entry.name).symlink_to(entry)
        for name in ("train.beton", "val.beton"):  # the blocks may write over these
            (work / name).unlink()
            shutil.copy(data / name, work / name)
        _pages[page] = [_given(page, data), work, 0, None]
    state = _pages[page]
    monkeypatch.setenv("RANK", "0")  # distributed=True loaders of one process
    monkeypatch.setenv("WORLD_SIZE", "1")
    # The blocks before this one, where another test process ran them.
    for k, earlier, k_kind, k_why in blocks(page)[state[2]:index - 1]:
        if state[3] is None and _runs_here(k_kind, k_why):
            try:
                _run(page, k, earlier, state)
            except BaseException:
                pass
        state[2] = k
    if state[3] is not None:
        pytest.fail(f"block {state[3]} of this page failed before this one")
    try:
        _run(page, index, code, state)
    finally:
        if index == len(blocks(page)):  # loaders keep threads and maps: close them with their page
            for v in list(state[0].values()):
                if type(v).__name__ == "Loader" and hasattr(v, "close"):
                    v.close()


def test_every_page_has_its_blocks_found():
    """The parser sees every ```python block (an unclosed one would swallow the page)."""
    for page in PAGES:
        text = page.read_text()
        assert len(blocks(page)) == text.count("```python"), page
        assert "```python\n```" not in text, f"{_rel(page)}: an empty code block"


def test_skips_are_few():
    """Blocks skipped everywhere are those that need a cluster, a remote
    bucket or another library; a new one is a decision, not a default."""
    skipped = [(p, i) for p, i, _, kind, _ in CASES if kind == "skip"]
    runnable = [(p, i) for p, i, _, kind, _ in CASES if kind != "skip"]
    assert len(skipped) <= 21 and len(runnable) >= 20, (len(skipped), len(runnable))
