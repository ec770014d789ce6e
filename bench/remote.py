"""`make bench-remote`: one .beton read from local disk, over HTTP and over S3.

A file of incompressible ~110 KB samples (no image decode, so the loader's I/O
path is what is measured) is read for one epoch in QUASI_RANDOM order:

  - from local disk with the process cache (the baseline);
  - over HTTP from a loopback range server, with 0 and 25 ms added to every
    response (a far object store), with 16 requests in flight (the default)
    and with 1 (no overlap);
  - over S3 from moto on 127.0.0.1 when moto[server] is installed (moto is a
    Python server: this row measures moto more than the loader).

Each row gives samples/s, MB/s, its ratio to local disk, and the requests,
bytes and retries of the epoch from Loader.stats. The servers run in this
process's threads or in moto, on the same cores as the loader: on a 2-core
machine the absolute figures are low; the ratios between rows are the point.
Options: --samples, --page-mib, --latency-ms, --workers.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

from ffcv_go import DatasetWriter, Loader  # noqa: E402
from ffcv_go.fields import BytesField, IntField  # noqa: E402
from ffcv_go.loader import OrderOption  # noqa: E402
from harness import range_server  # noqa: E402


def blob(i):
    rng = np.random.default_rng(i)
    return rng.integers(0, 256, 100_000 + (i * 7919) % 20_000, dtype=np.uint8)


class Dataset:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return blob(i), i


def start_moto(path):
    """moto on a free port with path uploaded as s3://bench/data.beton, or None."""
    moto = Path(sys.executable).parent / "moto_server"
    if not moto.exists():
        return None
    import boto3
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(moto), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(endpoint + "/moto-api/data.json", timeout=5).close()
            break
        except OSError:
            time.sleep(0.1)
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1",
                       "AWS_ENDPOINT_URL": endpoint, "AWS_EC2_METADATA_DISABLED": "true"})
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket="bench")
    s3.upload_file(str(path), "bench", "data.beton")
    return proc


def epoch(src, workers, in_flight=None):
    if in_flight:
        os.environ["FFCV_GO_REMOTE_IN_FLIGHT"] = str(in_flight)
    else:
        os.environ.pop("FFCV_GO_REMOTE_IN_FLIGHT", None)
    ld = Loader(src, batch_size=64, num_workers=workers, order=OrderOption.QUASI_RANDOM, os_cache=False,
                drop_last=False, seed=0)
    n, nbytes = 0, 0
    t0 = time.perf_counter()
    for b, _ in ld:
        n += len(b)
        nbytes += b.numel()
    dt = time.perf_counter() - t0
    return n / dt, nbytes / dt / 1e6, ld.stats["epochs"][-1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--samples", type=int, default=2000)
    p.add_argument("--page-mib", type=int, default=8)
    p.add_argument("--latency-ms", type=float, default=25)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ffcv_go-bench-remote-") as d:
        path = Path(d) / "data.beton"
        DatasetWriter(str(path), {"blob": BytesField(), "index": IntField()}, page_size=a.page_mib << 20,
                      progress=False).from_indexed_dataset(Dataset(a.samples))
        print(f"{path.stat().st_size / 1e6:.0f} MB, {a.samples} samples, {a.page_mib} MiB pages, "
              f"{a.workers} workers, QUASI_RANDOM, one epoch each")
        rows = [("local disk (process cache)", str(path), None)]
        servers = []
        for lat in (0.0, a.latency_ms / 1000):
            srv = range_server(d, lat)
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            servers.append(srv)
            url = f"http://127.0.0.1:{srv.server_address[1]}"
            ms = f"+{lat * 1000:.0f} ms" if lat else "no added latency"
            rows.append((f"HTTP, {ms}, 16 in flight", f"{url}/data.beton", None))
            if lat:
                rows.append((f"HTTP, {ms}, 1 in flight", f"{url}/data.beton", 1))
        moto = start_moto(path)
        if moto is not None:
            rows.append(("S3 (moto on 127.0.0.1)", "s3://bench/data.beton", None))
        base = None
        print(f"\n| source | samples/s | batch MB/s | vs local | requests | MB fetched | retries |\n|---|---|---|---|---|---|---|")
        try:
            for name, src, inflight in rows:
                sps, mbs, st = epoch(src, a.workers, inflight)
                base = base or sps
                print(f"| {name} | {sps:,.0f} | {mbs:,.0f} | {sps / base:.2f}x | {st['requests']} | "
                      f"{st['bytes_fetched'] / 1e6:,.0f} | {st['retries']} |", flush=True)
        finally:
            for srv in servers:
                srv.shutdown()
            if moto is not None:
                moto.terminate()
                moto.wait(10)


if __name__ == "__main__":
    main()
