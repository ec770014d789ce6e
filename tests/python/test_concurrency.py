"""Concurrency: loaders and iterators used from several threads at once, one
iterator shared by threads, and two processes writing at once all give the
same data as a single-threaded run, each batch exactly once.
"""
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from conftest import PYTHONPATH, collect, last_json

from ffcv_go import Loader
from ffcv_go.fields.decoders import RandomResizedCropRGBImageDecoder
from ffcv_go.loader import OrderOption
from ffcv_go.transforms import RandomHorizontalFlip, ToTensor


def test_four_loaders_and_four_iterators_from_threads(small_jpeg_file, no_leaks):
    def kw():
        return dict(batch_size=8, num_workers=2, order=OrderOption.RANDOM, seed=11,
                    pipelines={"image": [RandomResizedCropRGBImageDecoder((16, 16)), RandomHorizontalFlip(),
                                         ToTensor()]})
    ref_loader = Loader(small_jpeg_file, **kw())
    want = [collect(ref_loader) for _ in range(4)]  # epochs 0..3
    shared = Loader(small_jpeg_file, **kw())
    shared_iters = [iter(shared) for _ in range(4)]  # epochs 0..3 of one loader, at once

    def own(epoch, os_cache):
        loader = Loader(small_jpeg_file, os_cache=os_cache, **kw())
        for _ in range(epoch):
            loader.next_epoch += 1
        out = collect(loader)
        loader.close()
        return epoch, out

    def from_shared(k):
        return k, collect(shared_iters[k])

    with ThreadPoolExecutor(8) as ex:
        futures = [ex.submit(own, e, e % 2 == 0) for e in range(4)] + [ex.submit(from_shared, k) for k in range(4)]
        for f in futures:
            epoch, got = f.result(timeout=120)
            assert len(got) == len(want[epoch])
            for a, b in zip(got, want[epoch]):
                assert all(np.array_equal(x, y) for x, y in zip(a, b)), f"epoch {epoch} differs"
    del shared_iters
    shared.close()
    ref_loader.close()


SHARED_ITER_SCRIPT = """
import json, sys, threading
from ffcv_go import Loader
from ffcv_go.loader import OrderOption
loader = Loader(sys.argv[1], batch_size=2, num_workers=2, order=OrderOption.SEQUENTIAL)
results = []
for _ in range(5):
    it = iter(loader)
    lock, got = threading.Lock(), []

    def pull():
        while True:
            try:
                img, label = next(it)
            except StopIteration:
                return
            with lock:
                got.append(label.view(-1).tolist())

    threads = [threading.Thread(target=pull) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.append(sorted(x for b in got for x in b))
print(json.dumps(results))
"""


def test_one_iterator_shared_by_threads(tmp_path, small_jpeg_file):
    """Threads pulling from one iterator get every batch exactly once (this
    used to free tensors twice and abort the interpreter: subprocess)."""
    script = tmp_path / "shared.py"
    script.write_text(SHARED_ITER_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    try:
        proc = subprocess.run([sys.executable, str(script), str(small_jpeg_file)], capture_output=True, text=True,
                              timeout=120, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"threads sharing an iterator hung: {e.stderr}")
    for epoch in last_json(proc):
        assert epoch == list(range(64))


WRITE_SCRIPT = """
import sys
import numpy as np
from ffcv_go.fields import BytesField, IntField
from conftest import FnDataset, write
k = int(sys.argv[2])
write(sys.argv[1], {"blob": BytesField(), "label": IntField()},
      FnDataset(300, lambda i: (np.full(20_000 + i, (i * 7 + k) % 256, np.uint8), i * 10 + k)), num_workers=2)
print("written")
"""


def test_two_processes_write_at_once(tmp_path):
    script = tmp_path / "w.py"
    script.write_text(WRITE_SCRIPT)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    paths = [tmp_path / f"p{k}.beton" for k in range(2)]
    procs = [subprocess.Popen([sys.executable, str(script), str(p), str(k)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for k, p in enumerate(paths)]
    for p in procs:
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            pytest.fail("a writer process hung")
        assert p.returncode == 0 and "written" in out, err
    for k, path in enumerate(paths):
        seen = 0
        for blob, label in Loader(path, batch_size=50, num_workers=2, drop_last=False):
            for row, lab in zip(blob.numpy(), label.view(-1).tolist()):
                i = (lab - k) // 10
                assert lab == i * 10 + k
                assert (row[:20_000 + i] == (i * 7 + k) % 256).all() and not row[20_000 + i:].any()
                seen += 1
        assert seen == 300
    assert sorted(os.listdir(tmp_path)) == ["p0.beton", "p1.beton", "w.py"]
