"""The doctor's report alone (ffcv_go.doctor._report): its terminal text,
JSON and figure for decided reports of made-up measurements."""
import copy
import json

import pytest

from _doctor_cases import BIG, NFS, alone, measured, mixture, op, source, together
from ffcv_go.doctor import decide

MACHINE = {"cores": 2, "cpu": "Test CPU", "memory_total": 16 << 30, "usable_memory": 8 << 30,
           "cgroup_memory_limit": None, "load_average": [0.1, 0.1, 0.1]}
OPS = [op("RandomResizedCropRGBImageDecoder", 0.3, 1.2, decoder=True), op("GaussianBlur", 0.65, 2.6),
       op("ToTensor", 0.001, 0.004, where="python"), op("MyOp", 0.049, 0.2, where="python")]
VIEW_OPS = [op("RandomResizedCropRGBImageDecoder", 0.4, 1.0, decoder=True, output="view_0"),
            op("RandomResizedCropRGBImageDecoder", 0.4, 1.0, decoder=True, output="view_1"),
            op("GaussianBlur", 0.2, 0.5, output="view_1")]

SCENARIOS = [
    # (name, measurements, lines the text has, text it has not)
    ("cpu, ops, the first epoch on network storage",
     {"loader__ops": OPS, "dataset__filesystem": NFS, "storage__cold_sample_mb_s": 20.0, "dataset__images": BIG},
     ["storage (nfs4 at /data, network)", "cold sample reads", "page cache          the file was dropped",
      "first epoch", "of 16 epochs", "operations per image: GaussianBlur 2.60 ms (65%), "
      "RandomResizedCropRGBImageDecoder 1.20 ms (30%), MyOp [Python] 0.20 ms (5%)", "bottleneck: CPU",
      "pipeline: GaussianBlur, 2.60 ms per image", "cat x.beton > /dev/null", "max_resolution=480"],
     ["ToTensor", "\nmodel  "]),
    ("views: each op with its output", {"loader__ops": VIEW_OPS},
     ["RandomResizedCropRGBImageDecoder (view_0) 1.00 ms (40%)", "RandomResizedCropRGBImageDecoder (view_1)",
      "GaussianBlur 0.50 ms (20%)"], ["GaussianBlur (view_1)"]),
    ("not evicted: other processes hold the file",
     {"storage": {"kind": "local", "evicted": False, "evict": "auto", "page_mb_s": 900.0, "sample_mb_s": 300.0,
                  "warm_mb_s": 3000.0, "holders": {"pids": [11, 12], "unchecked": 0}}},
     ["not evicted: 2 other processes (11, 12) have the file open", "8 MiB pages         ",
      "sample reads"], ["cold "]),
    ("the model with the loader", {"model": alone(400.0), "together": together(0.03)},
     ["model  m on cpu, batch 256, fp32: alone", "with the loader (2 workers): 300 img/s over 12 steps; the "
      "training loop waited in next() 0.30 s of 10.00 s (3%); the training thread busy 97%, idle 3%", "bottleneck: MODEL"],
     ["recommendations"]),
    ("a model out of memory",
     {"model": {"name": "big", "device": "cuda:0", "error": "OutOfMemoryError: CUDA out of memory",
                "out_of_memory": True, "advice": "the model ran out of memory: try --batch-size 128"}},
     ["model  big on cuda:0: could not train: OutOfMemoryError", "try --batch-size 128", "note: the model big "
      "could not train"], ["with the loader"]),
]


MIXED = [source("a", 0.7, 20_000.0), source("held", 0.1, 20_000.0, evicted=False, filesystem=NFS),
         source("web", 0.2, 50.0, remote=True)]
RUN_SOURCES = [{"name": "a", "samples": 70, "pages_read": 2, "bytes_read": 2 << 23, "read_ns": 20_000_000,
                "read_mb_s": 838.9, "requests": 0, "bytes_fetched": 0, "retries": 0},
               {"name": "web", "samples": 20, "pages_read": 1, "bytes_read": 1 << 23, "read_ns": 4_000_000_000,
                "read_mb_s": 2.1, "requests": 1, "bytes_fetched": 1 << 23, "retries": 0}]


@pytest.mark.parametrize("name,change,has,has_not", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_report(tmp_path, name, change, has, has_not):
    r = measured(machine=dict(MACHINE), **copy.deepcopy(change))
    r.loader["subset_samples"] = 1000
    r.loader["first_batch_s"] = 0.1
    r.elapsed_s = 12.0
    decide(r)
    text = r.format()
    for line in has:
        assert line in text, (line, text)
    for line in has_not:
        assert line not in text, (line, text)
    assert text.startswith("ffcv-go doctor: x.beton") and text.endswith("(measured in 12 s)")
    assert json.loads(r.to_json()) == json.loads(json.dumps(r.to_dict()))
    r.plot(tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"


def test_report_of_a_mixture(tmp_path):
    """Storage source by source, the one that limits marked; the cold
    run's counters by source; the scan's sources."""
    r = mixture(copy.deepcopy(MIXED), machine=dict(MACHINE))
    r.loader.update(subset_samples=80_000, scan_sources=["a", "held"], in_memory_share=1.0, first_batch_s=0.1)
    r.loader["cold"] = [{"workers": 2, "order": "RANDOM", "os_cache": False, "img_s": 300.0, "pages_read": 3,
                         "sources": RUN_SOURCES}]
    r.settings["os_cache"] = False
    decide(r)
    text = r.format()
    for line in ["dataset   a mixture of 3 sources: 75,000 samples, 100,000 an epoch",
                 "storage, by source (a mixture of 3;",
                 "  a: 70% of every epoch (70,000 samples of its 25,000), 954 MiB, ext4 at /; fits in memory",
                 "  held: 10% of every epoch", "nfs4 at /data, network",
                 "not evicted: 1 other process (4242) has the file open",
                 "  web: 20% of every epoch (20,000 samples of its 25,000), 954 MiB, remote, "
                 "https://data.example.org/web.beton  <- limits the mixture",
                 "    fetch                  2.0 MB/s =        50 img/s",
                 "    at its share      the epoch can reach 250 img/s (pages fetched; read every epoch)",
                 "local sources together: 1.9 GiB of 8.0 GiB usable: fit",
                 "sources a, held: 80,000 samples an epoch, 100% of the local sources' bytes read into memory first",
                 "by source (its last epoch): a 70 samples, 2 pages read, 839 MB/s a read; web 20 samples, 1 page "
                 "read, 2.1 MB/s a read, 1 request, 8 MB fetched",
                 "bottleneck: STORAGE: source 'web' limits the mixture"]:
        assert line in text, (line, text)
    assert json.loads(r.to_json())["storage"]["limiting_source"] == "web"
    r.plot(tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
