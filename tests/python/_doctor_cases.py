"""Made-up doctor measurements, shared by the tests of its decisions and of
its report: a report as ``diagnose`` fills it before ``decide``."""
from ffcv_go.doctor import Report

GiB = 1 << 30


def measured(**over):
    """A report's measurements: 100,000 photos in a 4 GiB file that fits in
    8 GiB, on 2 cores decoding 950 img/s; ``section__key=value`` replaces
    one measurement, ``section=value`` a whole section."""
    scan = [{"workers": 1, "img_s": 500.0, "cpu_ms_per_image": 2.0, "cores_busy": 1.0},
            {"workers": 2, "img_s": 950.0, "cpu_ms_per_image": 2.1, "cores_busy": 2.0}]
    r = Report(data="x.beton",
               settings={"pipeline": "train", "res": 224, "batch_size": 256, "num_workers": 2, "order": "random",
                         "os_cache": True, "device": "cpu", "amp": False, "epochs": None},
               machine={"cores": 2, "usable_memory": 8 * GiB, "load_average": [0.1, 0.1, 0.1]},
               dataset={"path": "x.beton", "samples": 100_000, "bytes": 4 * GiB, "heap_bytes": 4 * GiB,
                        "page_size": 8 << 20, "remote": False, "mean_sample_bytes": 40_000.0, "fits_in_memory": True,
                        "filesystem": {"type": "ext4", "mount": "/", "network": False},
                        "images": {"field": "image", "median_width": 400, "median_height": 300,
                                   "jpeg_fraction": 1.0}},
               storage={"kind": "local", "evicted": True, "cold_page_mb_s": 500.0, "cold_sample_mb_s": 100.0,
                        "warm_mb_s": 5000.0},
               loader={"scan": scan, "current": scan[1], "best": scan[1],
                       "pipeline_facts": {"output_size": [224, 224], "normalize_on_cpu": False, "random_crop": True},
                       "stages": {"ms_per_image": {}, "share": {}}, "ops": []})
    for k, v in over.items():
        if "__" not in k:
            setattr(r, k, v)
            continue
        obj, _, key = k.partition("__")
        getattr(r, obj)[key] = v
    return r


def together(wait_share, img_s=300.0, device="cpu", amp=False, busy=None):
    """The loader feeding the model for 10 s: the share of it the training
    loop waited in next(), and the device's busy share (by default what the
    wait leaves; on a GPU timed with CUDA events, which can also overlap it)."""
    return {"name": "m", "device": device, "amp": amp, "workers": 2, "steps": 12, "img_s": img_s, "seconds": 10.0,
            "wait_s": 10.0 * wait_share, "wait_share": wait_share,
            "device_busy_share": 1 - wait_share if busy is None else busy,
            "device_busy_from": "CUDA events" if device.startswith("cuda") else "the training steps' time"}


def alone(img_s):
    return {"name": "m", "device": "cpu", "amp": False, "img_s": img_s, "steps_s": img_s / 256, "batch_size": 256}


def cold(random_rate, quasi_rate):
    return [{"workers": 2, "order": "RANDOM", "os_cache": True, "img_s": random_rate, "pages_read": 0},
            {"workers": 2, "order": "QUASI_RANDOM", "os_cache": False, "img_s": quasi_rate, "pages_read": 10}]


def op(name, share, ms=1.0, decoder=False, where="go", output="image"):
    return {"output": output, "op": name, "where": where, "decoder": decoder, "ms_per_image": ms, "share": share}


BIG = {"field": "image", "median_width": 2000, "median_height": 1500, "jpeg_fraction": 1.0}

NFS = {"type": "nfs4", "mount": "/data", "network": True}


# ---- a Mixture --------------------------------------------------------------------------------

EXT4 = {"type": "ext4", "mount": "/", "network": False}


def source(name, share, img_s, remote=False, filesystem=EXT4, samples=25_000, sample_bytes=40_000.0, files=None,
           evicted=True):
    """One source of a Mixture's storage as measured: its storage delivers
    img_s of its samples (of sample_bytes, pages full), fetched (remote) or
    read cold (local, whole pages and sample-sized reads alike)."""
    files = files or [f"https://data.example.org/{name}.beton" if remote else f"/data/{name}.beton"]
    mb_s = img_s * sample_bytes / 1e6
    x = {"name": name, "share": share, "per_epoch": int(share * 100_000), "samples": samples, "files": len(files),
         "file_names": files, "path": files[0], "bytes": int(samples * sample_bytes),
         "heap_bytes": int(samples * sample_bytes), "page_size": 8 << 20, "mean_sample_bytes": sample_bytes,
         "page_bytes_per_sample": sample_bytes, "remote": remote, "filesystem": None if remote else filesystem,
         "fits_in_memory": not remote}
    if remote:
        x.update(kind="remote", evicted=False, fetch_mb_s=mb_s)
    elif evicted:
        x.update(kind="local", evicted=True, evict="auto", cold_page_mb_s=mb_s, cold_sample_mb_s=mb_s,
                 warm_mb_s=5000.0, holders={"pids": [], "unchecked": 0})
    else:
        x.update(kind="local", evicted=False, evict="auto", page_mb_s=mb_s, sample_mb_s=mb_s, warm_mb_s=5000.0,
                 holders={"pids": [4242], "unchecked": 0})
    return x


def mixture(sources, local_fits=True, **over):
    """measured()'s report for a Mixture of sources (100,000 samples an
    epoch, decoded at 950 img/s), its local sources fitting in memory
    together or not."""
    r = measured(**over)
    local = sum(x["bytes"] for x in sources if not x["remote"])
    remote = any(x["remote"] for x in sources)
    r.data = "Mixture([...])"
    r.dataset.update(path=r.data, sources=[x["name"] for x in sources], epoch_samples=100_000,
                     samples=sum(x["samples"] for x in sources), bytes=sum(x["bytes"] for x in sources),
                     heap_bytes=sum(x["heap_bytes"] for x in sources), local_bytes=local, remote=remote,
                     local_fits_in_memory=local_fits, fits_in_memory=local_fits and not remote, filesystem=None)
    r.storage = {"kind": "mixture", "evict": "auto", "sources": sources}
    if not local_fits:
        r.machine["usable_memory"] = local // 2
        for x in sources:
            x["fits_in_memory"] = False
    return r
