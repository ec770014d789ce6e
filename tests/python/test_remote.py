""".beton files on S3 and HTTP(S): reading with Loader("s3://...") and
Loader("http://..."), writing with DatasetWriter("s3://..."). Every test talks
to real servers on 127.0.0.1: moto (an S3-compatible server, with IAM
authentication on, so bad credentials are refused), a small range-capable
HTTP server, and a proxy that fails, stalls or cuts short a share of the
responses."""
import gc
import http.client
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from conftest import FnDataset, check_paged_batch, collect, ids, paged_blob, same_batches, sample_pages, write

from ffcv_go import DatasetWriter, Loader
from ffcv_go.fields import BytesField, IntField, RGBImageField
from ffcv_go.loader import OrderOption
from ffcv_go.reader import Reader

MOTO = Path(sys.executable).parent / "moto_server"
BUCKET = "ffcv-test"

pytestmark = pytest.mark.skipif(not MOTO.exists(), reason="moto[server] is not installed (make venv)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(handler):
    """A threaded HTTP server for handler on a free loopback port; (server, url).
    HTTP/1.0 (the handlers' default): a connection per request, so no handler
    thread outlives its response."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"


def stop(srv):
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module", autouse=True)
def settle_at_end():
    """Leaves no threads or sockets behind for later tests' resource checks:
    loaders are collected (closing their connections), stalled handlers end."""
    threads = threading.active_count()
    yield
    deadline = time.monotonic() + 10
    while True:
        gc.collect()
        if threading.active_count() <= threads or time.monotonic() > deadline:
            break
        time.sleep(0.1)


@pytest.fixture(scope="module")
def moto():
    """A moto S3 server with one IAM user allowed everything, and
    authentication enforced from then on: {endpoint, key, secret}."""
    import boto3
    port = free_port()
    proc = subprocess.Popen([str(MOTO), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(endpoint + "/moto-api/data.json", timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("moto_server did not start")
                time.sleep(0.05)
        kw = dict(endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup",
                  aws_secret_access_key="setup")
        iam = boto3.client("iam", **kw)
        iam.create_user(UserName="trainer")
        key = iam.create_access_key(UserName="trainer")["AccessKey"]
        iam.put_user_policy(UserName="trainer", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        # From now on every request must be signed by a known key.
        urllib.request.urlopen(urllib.request.Request(endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
                                                      headers={"Content-Type": "text/plain"})).close()
        creds = {"endpoint": endpoint, "key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
        client(creds).create_bucket(Bucket=BUCKET)
        yield creds
    finally:
        proc.terminate()
        proc.wait(10)


def client(creds, endpoint=None):
    import boto3
    return boto3.client("s3", endpoint_url=endpoint or creds["endpoint"], region_name="us-east-1",
                        aws_access_key_id=creds["key"], aws_secret_access_key=creds["secret"])


@pytest.fixture
def s3(moto, monkeypatch, tmp_path):
    """The standard AWS variables pointing at moto (away from any ~/.aws of
    the machine), fast retries; returns a boto3 client for checks."""
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(k)
    env = {"AWS_ACCESS_KEY_ID": moto["key"], "AWS_SECRET_ACCESS_KEY": moto["secret"], "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": moto["endpoint"], "AWS_CONFIG_FILE": str(tmp_path / "none"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_EC2_METADATA_DISABLED": "true",
           "FFCV_GO_REMOTE_BACKOFF": "0.002"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return client(moto)


N = 130


@pytest.fixture(scope="module")
def paged_file(tmp_path_factory):
    """130 samples of ~100 KB blobs (conftest's paged_blob) over 7 pages of 2 MiB: blob, index."""
    return write(tmp_path_factory.mktemp("remote") / "paged.beton", fields(), FnDataset(N, lambda i: (paged_blob(i), i)),
                 num_workers=2)


@pytest.fixture(scope="module")
def remote_paged(paged_file, moto):
    """paged_file uploaded as s3://BUCKET/paged.beton."""
    client(moto).upload_file(str(paged_file), BUCKET, "paged.beton")
    return f"s3://{BUCKET}/paged.beton"


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves the files of ROOT with single byte ranges, as static file servers and CDNs do."""
    root = None

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = Path(self.root) / self.path.lstrip("/").split("?")[0]
        if not path.is_file():
            self.send_error(404)
            return
        size = path.stat().st_size
        rng = self.headers.get("Range", "")
        if not rng.startswith("bytes="):
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.wfile.write(path.read_bytes())
            return
        a, b = rng[len("bytes="):].split("-")
        a, b = int(a), min(int(b), size - 1)
        if a >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {a}-{b}/{size}")
        self.send_header("Content-Length", str(b - a + 1))
        self.send_header("ETag", f'"{path.stat().st_mtime_ns}-{size}"')
        self.end_headers()
        with open(path, "rb") as f:
            f.seek(a)
            self.wfile.write(f.read(b - a + 1))


@pytest.fixture(scope="module")
def http_paged(paged_file):
    handler = type("Handler", (RangeHandler,), {"root": str(Path(paged_file).parent)})
    srv, url = serve(handler)
    yield f"{url}/{Path(paged_file).name}"
    stop(srv)


class Proxy:
    """Forwards requests to target, sabotaging every `every`-th response
    (0: none) in turn with a 503 SlowDown, a stall past the client's
    timeout, or a body cut short. fail(handler) -> True makes that request
    a 503 too."""

    def __init__(self, target, every=0, stall=0.0, delay=0.0):
        self.target = target.split("://", 1)[1]
        self.every, self.stall, self.fail, self.delay = every, stall, None, delay
        self.n, self.lock = 0, threading.Lock()
        self.counts = {"ok": 0, "503": 0, "stall": 0, "cut": 0}
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                proxy.handle(self)

            do_PUT = do_POST = do_HEAD = do_DELETE = do_GET

        self.server, self.url = serve(Handler)

    def handle(self, h):
        with self.lock:
            self.n += 1
            kind = "ok"
            if self.fail is not None and self.fail(h):
                kind = "503"
            elif self.every and self.n % self.every == 0:
                kind = ["503", "stall", "cut"][(self.n // self.every) % 3]
            self.counts[kind] += 1
        body = h.rfile.read(int(h.headers.get("Content-Length", 0) or 0))
        if kind == "503":
            msg = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            h.send_response(503)
            h.send_header("Content-Type", "application/xml")
            h.send_header("Content-Length", str(len(msg)))
            h.end_headers()
            h.wfile.write(msg)
            return
        if kind == "stall":
            time.sleep(self.stall)
        time.sleep(self.delay)
        conn = http.client.HTTPConnection(self.target, timeout=30)
        conn.putrequest(h.command, h.path, skip_host=True, skip_accept_encoding=True)
        for k, v in h.headers.items():  # Host too: S3 signatures cover it
            conn.putheader(k, v)
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        try:
            h.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data[:len(data) // 2] if kind == "cut" else data)
        except OSError:
            pass  # the client gave up on a stalled response
        if kind == "cut":
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)

    def close(self):
        stop(self.server)


def paged_loader(src, order, **kw):
    kw = {"batch_size": 20, "num_workers": 2, "seed": 5, "drop_last": False, "os_cache": False, **kw}
    return Loader(src, order=order, **kw)


def heap_bytes(path, pages):
    """The bytes the process cache reads for pages of a local file: whole
    pages, the last one ending at the allocation table."""
    r = Reader(str(path))
    ps, end = r.page_size, r._info["alloc_table_ptr"]
    r.close()
    return sum(min(ps, end - p * ps) for p in pages)


ORDERS = [OrderOption.SEQUENTIAL, OrderOption.RANDOM, OrderOption.QUASI_RANDOM]


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.name)
@pytest.mark.parametrize("scheme", ["s3", "http"])
def test_batches_match_local_file(s3, paged_file, remote_paged, http_paged, scheme, order):
    """Every order gives the local file's batches; each page is fetched once
    (room for all of them), with one request, and the stats say so."""
    url = remote_paged if scheme == "s3" else http_paged
    pages = set(sample_pages(paged_file).tolist())
    local = paged_loader(paged_file, order, max_resident_pages=64)
    ld = paged_loader(url, order, max_resident_pages=64)
    assert ld.os_cache is False
    for epoch in range(2):
        got = collect(ld)
        assert same_batches(got, collect(local))
        st = ld.stats["epochs"][-1]
        assert st["epoch"] == epoch
        assert st["pages_read"] == len(pages), st
        assert st["requests"] == len(pages) and st["retries"] == 0, st
        assert st["bytes_fetched"] == heap_bytes(paged_file, pages), st
    for b in got:
        check_paged_batch(*b)
    total = ld.stats
    # Opening took a size probe and the header, metadata and allocation table reads.
    assert total["requests"] - sum(e["requests"] for e in total["epochs"]) <= 4, total


def test_resident_pages_bound_refetches(s3, paged_file, remote_paged):
    """With room for 3 pages, RANDOM order fetches pages again rather than
    holding more: still one request per page read, the bound kept, reads
    overlapping."""
    want = collect(paged_loader(paged_file, OrderOption.RANDOM, max_resident_pages=3))
    ld = paged_loader(remote_paged, OrderOption.RANDOM, max_resident_pages=3)
    assert same_batches(collect(ld), want)
    st = ld.stats
    e = st["epochs"][-1]
    assert e["pages_read"] > len(set(sample_pages(paged_file).tolist())), e
    assert e["requests"] == e["pages_read"], e
    assert st["peak_resident_pages"] <= 3 and 1 <= st["peak_in_flight"] <= 3, st


def test_page_reads_overlap(s3, moto, paged_file, remote_paged, monkeypatch):
    """Over a slow link (every response 0.2 s late) pages are fetched several
    at a time, ahead of the workers, never more than the in-flight bound."""
    proxy = Proxy(moto["endpoint"], delay=0.2)
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    monkeypatch.setenv("FFCV_GO_REMOTE_IN_FLIGHT", "3")
    try:
        ld = paged_loader(remote_paged, OrderOption.SEQUENTIAL, batch_size=10)
        assert same_batches(collect(ld), collect(paged_loader(paged_file, OrderOption.SEQUENTIAL, batch_size=10)))
        assert 2 <= ld.stats["peak_in_flight"] <= 3, ld.stats
    finally:
        proxy.close()


def test_shards_on_s3(s3, paged_file, tmp_path):
    """Shards written to S3 and read back as one dataset (a list of URLs):
    the batches of the same rows in one local file; stats add up the shards."""
    for k, (a, b) in enumerate([(0, 50), (50, N)]):
        DatasetWriter(f"s3://{BUCKET}/shards/part-{k}.beton", fields(), num_workers=2, progress=False
                      ).from_indexed_dataset(FnDataset(b - a, lambda i, a=a: (paged_blob(a + i), a + i)))
    urls = [f"s3://{BUCKET}/shards/part-{k}.beton" for k in range(2)]
    # A "directory" and a glob are listed (ListObjectsV2), sorted.
    assert Reader(f"s3://{BUCKET}/shards/").file_names == urls
    assert Reader(f"s3://{BUCKET}/shards/part-*.beton").file_names == urls
    with pytest.raises(FileNotFoundError, match="matches no object"):
        Reader(f"s3://{BUCKET}/shards/train-*.beton")
    for order, src in ((OrderOption.SEQUENTIAL, urls), (OrderOption.QUASI_RANDOM, f"s3://{BUCKET}/shards/")):
        ld = paged_loader(src, order)
        got = collect(ld)
        assert sorted(int(i) for b in got for i in np.asarray(b[1]).reshape(-1)) == list(range(N))
        for b in got:
            check_paged_batch(*b)
        if order == OrderOption.SEQUENTIAL:
            assert same_batches(got, collect(paged_loader(paged_file, order)))
        e = ld.stats["epochs"][-1]
        assert e["requests"] == e["pages_read"] > 0 and e["bytes_fetched"] > 0, e


def test_flaky_server_loses_nothing(s3, moto, paged_file, remote_paged, monkeypatch):
    """Every fifth response fails (503), stalls past the timeout or is cut
    short: the batches are still the local file's; retries are counted."""
    # The timeout leaves room for a loaded machine: a Python proxy and server
    # share 2 cores with the loader.
    proxy = Proxy(moto["endpoint"], every=5, stall=2.5)
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    monkeypatch.setenv("FFCV_GO_REMOTE_TIMEOUT", "2")
    monkeypatch.setenv("FFCV_GO_REMOTE_ATTEMPTS", "12")
    try:
        local = paged_loader(paged_file, OrderOption.RANDOM)
        ld = paged_loader(remote_paged, OrderOption.RANDOM)
        for _ in range(2):  # two epochs, two orders
            assert same_batches(collect(ld), collect(local))
        e = ld.stats["epochs"]
        assert all(x["requests"] == x["pages_read"] + x["retries"] for x in e), e
        assert min(proxy.counts.values()) > 0, proxy.counts
        assert ld.stats["retries"] > 0
    finally:
        proxy.close()


def test_retries_exhausted_name_url_page_status(s3, moto, remote_paged, monkeypatch):
    proxy = Proxy(moto["endpoint"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    monkeypatch.setenv("FFCV_GO_REMOTE_ATTEMPTS", "3")
    try:
        ld = paged_loader(remote_paged, OrderOption.SEQUENTIAL)
        proxy.fail = lambda h: h.command == "GET"
        with pytest.raises(OSError) as e:
            collect(ld)
        msg = str(e.value)
        assert remote_paged in msg and "page " in msg and "HTTP 503 SlowDown after 3 attempts" in msg, msg
    finally:
        proxy.close()


def test_open_errors(s3, moto, http_paged, monkeypatch):
    with pytest.raises(FileNotFoundError, match="NoSuchKey"):
        Loader(f"s3://{BUCKET}/missing.beton", batch_size=4)
    with pytest.raises(FileNotFoundError, match="s3://no-such-bucket/x.beton: open: HTTP 404 NoSuchBucket"):
        Loader("s3://no-such-bucket/x.beton", batch_size=4)
    with pytest.raises(ValueError, match="needs a bucket and a key"):
        Loader("s3://bucket-only", batch_size=4)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(OSError, match="HTTP 403") as e:
        Loader(f"s3://{BUCKET}/paged.beton", batch_size=4)
    assert "not-the-secret" not in str(e.value) and moto["key"] not in str(e.value)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIANOSUCHKEY")
    with pytest.raises(OSError, match="InvalidAccessKeyId"):
        Loader(f"s3://{BUCKET}/paged.beton", batch_size=4)
    with pytest.raises(FileNotFoundError, match="nothing.beton: open: HTTP 404"):
        Loader(http_paged.rsplit("/", 1)[0] + "/nothing.beton", batch_size=4)


def test_reader_needs_map_for_python_reads(s3, remote_paged):
    r = Reader(remote_paged)
    assert r.num_samples == N
    assert r.metadata["f1"].tolist() == list(range(N))  # the tables were fetched at open
    r.close()


def test_small_file_fetches_its_data(tmp_path):
    """Reading a small file (40 photos, the default 8 MiB pages) over HTTP
    fetches, counted at the server, its photos' bytes and little more: the
    opening reads (at most 64 KiB of header and tables), the tables again
    with the page they share with the heap; not whole pages of padding."""
    from conftest import fixture_file, fixture_images
    from ffcv_go.fields.decoders import CenterCropRGBImageDecoder, IntDecoder
    images = fixture_images(fixture_file("images_raw_var")[1])
    path = tmp_path / "small.beton"
    DatasetWriter(str(path), {"image": RGBImageField(write_mode="jpg", jpeg_quality=90), "label": IntField()},
                  num_workers=2, progress=False).from_indexed_dataset([(images[i % len(images)], i) for i in range(40)])
    r = Reader(str(path))
    data, page_size = int(r.alloc_table["size"].sum()), r.page_size
    r.close()
    assert page_size == 8 << 20
    served = []

    class Counting(RangeHandler):
        root = str(tmp_path)

        def do_GET(self):
            wfile = self.wfile

            class Count:
                def write(_, b):
                    served.append(len(b))
                    return wfile.write(b)

                def __getattr__(_, name):
                    return getattr(wfile, name)
            self.wfile = Count()
            super().do_GET()

    srv, url = serve(Counting)
    try:
        for os_cache in (False, True):  # a remote file is read through the process cache either way
            served.clear()
            ld = Loader(f"{url}/small.beton", batch_size=8, order=OrderOption.SEQUENTIAL, os_cache=os_cache,
                        pipelines={"image": [CenterCropRGBImageDecoder((16, 16), 1.0)], "label": [IntDecoder()]})
            assert list(ids(collect(ld), 1)) == list(range(40))
            del ld
            assert data <= sum(served) <= data + (128 << 10), (sum(served), data)
    finally:
        stop(srv)


# ---- writing -------------------------------------------------------------------

def rows(n, fail_at=None):
    def item(i):
        if i == fail_at:
            raise RuntimeError(f"dataset broke at item {i}")
        return (paged_blob(i), i)
    return FnDataset(n, item)


def fields():
    return {"blob": BytesField(), "index": IntField()}


def no_upload_left(s3, key):
    with pytest.raises(s3.exceptions.ClientError):
        s3.head_object(Bucket=BUCKET, Key=key)
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads"), "a multipart upload was left open"


def temp_uploads():
    import tempfile
    return set(Path(tempfile.gettempdir()).glob("ffcv_go-upload-*"))


def test_writer_uploads_the_finished_file(s3, tmp_path):
    before = temp_uploads()
    local = tmp_path / "local.beton"
    DatasetWriter(str(local), fields(), num_workers=2, progress=False).from_indexed_dataset(rows(60))
    DatasetWriter(f"s3://{BUCKET}/out/written.beton", fields(), num_workers=2,
                  progress=False).from_indexed_dataset(rows(60))
    got = s3.get_object(Bucket=BUCKET, Key="out/written.beton")["Body"].read()
    assert got == local.read_bytes()
    assert not s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads")
    assert temp_uploads() <= before, "the local temporary file was left behind"
    # And it reads back through the loader.
    ld = Loader(f"s3://{BUCKET}/out/written.beton", batch_size=16, order=OrderOption.SEQUENTIAL, drop_last=False)
    assert [int(i) for b in ld for i in np.asarray(b[1]).reshape(-1)] == list(range(60))


def test_writer_failure_leaves_no_object(s3):
    with pytest.raises(RuntimeError, match="dataset broke at item 37"):
        DatasetWriter(f"s3://{BUCKET}/out/broken.beton", fields(), num_workers=2,
                      progress=False).from_indexed_dataset(rows(60, fail_at=37), pool=None)
    no_upload_left(s3, "out/broken.beton")


def test_writer_upload_failure_aborts(s3, moto, monkeypatch):
    """The upload itself fails (every part request refused): an error naming
    the URL, no object, no multipart upload left."""
    proxy = Proxy(moto["endpoint"])
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    monkeypatch.setenv("FFCV_GO_REMOTE_ATTEMPTS", "2")

    def breaking(i):
        if i == 59:  # after the upload began, before its parts
            proxy.fail = lambda h: h.command == "PUT" and "partNumber=" in h.path
        return (paged_blob(i), i)
    try:
        with pytest.raises(OSError, match=rf"s3://{BUCKET}/out/unlucky.beton: upload part \d bytes \[\d+, \d+\): HTTP 503 SlowDown after 2 attempts"):
            DatasetWriter(f"s3://{BUCKET}/out/unlucky.beton", fields(), num_workers=2,
                          progress=False).from_indexed_dataset(FnDataset(60, breaking), pool=None)
    finally:
        proxy.close()
    no_upload_left(s3, "out/unlucky.beton")


def test_writer_destination_errors(s3, monkeypatch):
    with pytest.raises(FileNotFoundError, match="NoSuchBucket"):
        DatasetWriter("s3://no-such-bucket/x.beton", fields(), progress=False).from_indexed_dataset(rows(3))
    with pytest.raises(ValueError, match="only s3:// URLs can be written"):
        DatasetWriter("https://example.invalid/x.beton", fields(), progress=False).from_indexed_dataset(rows(3))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(OSError, match="start upload: HTTP 403"):
        DatasetWriter(f"s3://{BUCKET}/x.beton", fields(), progress=False).from_indexed_dataset(rows(3))


def test_image_folder_to_s3(s3, tmp_path):
    """from_image_folder (Go reads the files) uploads the same bytes it writes locally."""
    from PIL import Image
    from conftest import fixture_file, fixture_images
    from ffcv_go.fields.decoders import CenterCropRGBImageDecoder, IntDecoder
    _, content = fixture_file("images_raw_var")
    for k, img in enumerate(fixture_images(content)[:6]):
        d = tmp_path / "folder" / f"class{k % 2}"
        d.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img).save(d / f"{k}.png")
    f = {"image": RGBImageField(write_mode="jpg", jpeg_quality=90), "label": IntField()}
    local = tmp_path / "folder.beton"
    DatasetWriter(str(local), f, num_workers=2, progress=False).from_image_folder(tmp_path / "folder")
    DatasetWriter(f"s3://{BUCKET}/out/folder.beton", f, num_workers=2,
                  progress=False).from_image_folder(tmp_path / "folder")
    assert s3.get_object(Bucket=BUCKET, Key="out/folder.beton")["Body"].read() == local.read_bytes()
