"""The doctor on a Mixture, end to end: three local .beton files of real
photos (one with its own field names, one in two shards) and a fourth
served over HTTP on 127.0.0.1. Each source's storage is read on its own
files and reported; through a slow link (latency and a bandwidth cap) the
HTTP source is measurably slower than the local ones, and named with its
fix when it limits the mixture; unthrottled, it does not limit. A local
source another process holds is not dropped from the page cache, the
others are. The decisions alone, over made-up measurements, are in
test_doctor_decide.py."""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from test_remote import RangeHandler, serve, stop

from ffcv_go.doctor import diagnose
from ffcv_go.loader import Mixture, Source

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

# The verdicts come from measured rates: nothing else may run beside them.
pytestmark = pytest.mark.serial

LINK_BYTES_PER_S = 2e6  # the slow link: 2 MB/s, shared by its requests
LINK_LATENCY_S = 0.02
SHARES = {"a": 0.35, "b": 0.2, "c": 0.2, "web": 0.25}


@pytest.fixture(scope="module")
def photo_sources(tmp_path_factory):
    """a: 240 photos; b: 240 under other field names; c: two shards of 120;
    web.beton: 300 photos, one 2 MiB page (160 px crops, about 6 kB each)."""
    import make_dataset
    if not make_dataset.find_photos():
        pytest.skip("no photos installed (Debian wallpaper packages)")
    from doctor_storage import write_photos
    d = tmp_path_factory.mktemp("doctor_mixture")
    write_photos(d / "a.beton", 240, side=160, seed=1, distinct=6)
    write_photos(d / "b.beton", 240, side=160, seed=2, distinct=6, names=("img", "target"))
    for k in range(2):
        write_photos(d / f"c-{k}.beton", 120, side=160, seed=3 + k, distinct=6)
    write_photos(d / "web.beton", 300, side=160, seed=5, distinct=6)
    return d


class SlowLink(RangeHandler):
    """RangeHandler behind a link of `bytes_per_s` (None: no cap), every
    response after `latency` seconds: responses queue for the link, as on a
    saturated network."""
    bytes_per_s = None
    latency = 0.0
    lock = threading.Lock()
    free_at = 0.0

    def do_GET(self):
        rng = self.headers.get("Range", "")
        n = 0
        if rng.startswith("bytes="):
            a, b = rng[len("bytes="):].split("-")
            n = int(b) - int(a) + 1
        if self.bytes_per_s:
            with SlowLink.lock:  # the link's queue: each response starts when the previous one is through
                start = max(time.monotonic(), SlowLink.free_at)
                SlowLink.free_at = start + min(n, 1 << 24) / self.bytes_per_s
                done = SlowLink.free_at
            time.sleep(max(0.0, done - time.monotonic()))
        time.sleep(self.latency)
        super().do_GET()


def served(root, **link):
    return serve(type("Handler", (SlowLink,), {"root": str(root), **link}))


def mixture_of(d, url):
    return Mixture([Source(str(d / "a.beton"), name="a", proportion=SHARES["a"]),
                    Source(str(d / "b.beton"), name="b", proportion=SHARES["b"],
                           rename={"img": "image", "target": "label"}),
                    Source(str(d / "c-*.beton"), name="c", proportion=SHARES["c"]),
                    Source(f"{url}/web.beton", name="web", proportion=SHARES["web"])])


HOLD = "import sys; f = open(sys.argv[1], 'rb'); print('ready', flush=True); sys.stdin.read()"


def test_slow_http_source_is_named(photo_sources, tmp_path):
    srv, url = served(photo_sources, bytes_per_s=LINK_BYTES_PER_S, latency=LINK_LATENCY_S)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(photo_sources / "c-1.beton")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        report = diagnose(mixture_of(photo_sources, url), res=64, batch_size=32, max_seconds=8, progress=False)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
        stop(srv)
    text = report.format()
    st = {x["name"]: x for x in report.storage["sources"]}
    assert list(st) == ["a", "b", "c", "web"]
    assert {k: x["share"] for k, x in st.items()} == pytest.approx(SHARES)
    # Each source read on its own storage: the local ones from disk (cold
    # where dropped), the HTTP one fetched through the link.
    web = st["web"]
    assert web["remote"] and web["kind"] == "remote" and web["path"] == f"{url}/web.beton"
    assert 0 < web["fetch_mb_s"] <= LINK_BYTES_PER_S / 1e6 * 1.1, web
    for k in ("a", "b"):
        assert st[k]["evicted"] and st[k]["cold_page_mb_s"] > 0 and st[k]["warm_mb_s"] > 0, st[k]
        assert st[k]["filesystem"]["type"] and st[k]["fits_in_memory"]
    # c's second shard is held open by another process: c is read as found.
    assert not st["c"]["evicted"] and holder.pid in st["c"]["holders"]["pids"] and st["c"]["page_mb_s"] > 0
    assert st["c"]["files"] == 2
    local = min(st[k].get("cold_page_mb_s") or st[k]["page_mb_s"] for k in ("a", "b", "c"))
    assert local > 10 * web["fetch_mb_s"], (local, web)
    # It limits the mixture at its share, and is named with its fix.
    assert web["every_epoch"] and not st["a"]["every_epoch"]
    assert web["epoch_img_s"] == pytest.approx(web["img_s"] / SHARES["web"])
    assert report.bottleneck == "storage", text
    assert report.storage["limiting_source"] == "web"
    assert report.summary.startswith("source 'web' limits the mixture: it makes 25% of every epoch"), text
    assert any(r.setting.startswith("Source('LOCAL_DISK/web.beton', ...)  # curl -o LOCAL_DISK/web.beton "
                                    f"{url}/web.beton") for r in report.recommendations), text
    # The loader runs read the Mixture: the last epoch's counters by source.
    assert report.settings["os_cache"] is False  # a remote source: the process cache reads every source
    assert report.loader["scan_sources"] == ["a", "b", "c"] and report.loader["in_memory_share"] == 1.0
    # A run cut at max_seconds has no epoch's counters; the first one ends in its time.
    whole = [run for run in report.loader["cold"] if not run["cut"]]
    assert whole and report.loader["cold"][0] is whole[0], text
    for run in whole:
        by = {x["name"]: x for x in run["sources"]}
        assert by["web"]["requests"] > 0 and by["web"]["bytes_fetched"] > 0, run
        assert by["a"]["requests"] == 0 and by["a"]["pages_read"] > 0
        assert by["web"]["read_mb_s"] < min(by[k]["read_mb_s"] for k in ("a", "b", "c") if by[k]["read_mb_s"])
    assert "<- limits the mixture" in text.split("\n  web:")[1].split("\n")[0]
    assert "at its share      the epoch can reach" in text and "by source (its last epoch): a " in text
    assert "not evicted: 1 other process" in text
    json.loads(report.to_json())
    report.plot(tmp_path / "mixture.png")
    assert (tmp_path / "mixture.png").read_bytes()[:4] == b"\x89PNG"


MIXTURE_FILE = """
from ffcv_go.loader import Mixture, Source

data = Mixture([Source({a!r}, name="a", proportion=0.35),
                Source({b!r}, name="b", proportion=0.2, rename={{"img": "image", "target": "label"}}),
                Source({c!r}, name="c", proportion=0.2),
                Source({web!r}, name="web", proportion=0.25)])
"""


def test_command_line_mixture_file_fast_http_source(photo_sources, tmp_path):
    """`python -m ffcv_go doctor mix.py`, the HTTP source unthrottled on
    127.0.0.1: every source's rate is reported and none limits."""
    srv, url = served(photo_sources)
    f = tmp_path / "mix.py"
    f.write_text(MIXTURE_FILE.format(a=str(photo_sources / "a.beton"), b=str(photo_sources / "b.beton"),
                                     c=str(photo_sources / "c-*.beton"), web=f"{url}/web.beton"))
    try:
        proc = subprocess.run([sys.executable, "-m", "ffcv_go", "doctor", str(f), "--json", "--res", "64",
                               "--batch-size", "32", "--max-seconds", "5", "--evict", "never"],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    finally:
        stop(srv)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)
    st = {x["name"]: x for x in r["storage"]["sources"]}
    assert r["dataset"]["sources"] == ["a", "b", "c", "web"] and r["dataset"]["epoch_samples"] == 1020
    assert st["web"]["fetch_mb_s"] > 10 * LINK_BYTES_PER_S / 1e6, st["web"]
    assert all(not st[k]["evicted"] and st[k]["page_mb_s"] > 0 for k in ("a", "b", "c"))
    assert r["bottleneck"] != "storage" and r["storage"].get("limiting_source") is None, r["summary"]
    assert st["web"]["epoch_img_s"] > r["loader"]["current"]["img_s"]


@pytest.mark.parametrize("text,match", [
    ("x = 1\n", "defines no `data`"),
    ("data = 'other.py'\n", "another .py file"),
])
def test_bad_mixture_file(tmp_path, text, match):
    f = tmp_path / "mix.py"
    f.write_text(text)
    with pytest.raises(ValueError, match=match):
        diagnose(f, progress=False)


SLOW_BYTES_PER_S = 1e6  # a 1 MB/s link: a 2 MiB page takes 2 s, four in flight together 8 s
MAX_SECONDS = 8
# What the doctor may take beyond max_seconds: opening the files, the last
# batch in flight, closing the loaders and the report.
OVER_S = 3.0


def test_slow_source_stays_within_max_seconds(photo_sources, tmp_path):
    """A mixture with a source behind a 1 MB/s link whose pages take longer
    to fetch than the whole budget: the doctor cuts every phase at its
    deadline (warm-up and the first pages included) and still names the
    slow source, within OVER_S of max_seconds."""
    from doctor_storage import write_photos
    write_photos(tmp_path / "slow.beton", 1200, side=160, seed=7, distinct=6)  # 4 pages of 2 MiB
    srv, url = served(tmp_path, bytes_per_s=SLOW_BYTES_PER_S, latency=LINK_LATENCY_S)
    mix = Mixture([Source(str(photo_sources / "a.beton"), name="a", proportion=0.75),
                   Source(f"{url}/slow.beton", name="slow", proportion=0.25)])
    t0 = time.perf_counter()
    try:
        report = diagnose(mix, res=64, batch_size=32, max_seconds=MAX_SECONDS, progress=False)
    finally:
        wall = time.perf_counter() - t0
        stop(srv)
    text = report.format()
    assert wall <= MAX_SECONDS + OVER_S, (wall, text)
    assert report.elapsed_s <= MAX_SECONDS + OVER_S, text
    assert report.bottleneck == "storage" and report.storage["limiting_source"] == "slow", text
