"""Writer speed: ImageFolder of JPEGs -> .beton (RGBImageField jpg q90 + IntField).

Compares, for each max_resolution (default: 0 = keep the size, the fair
setting, and 256, the demo's):

- ffcv_go from_image_folder (Go reads, decodes, resizes and encodes; JPEGs
  that need no resize are transcoded in the DCT domain, the default, with
  restart markers added);
- the same with restart_markers=False (a source scan at the quality is kept
  as it is, without the markers the loader cuts crops at);
- the same with jpeg_transcode=False (every image re-encoded from pixels,
  as FFCV does);
- the same with keep_source_jpeg=True (explicit option: JPEGs that need no
  resize are stored byte for byte after a clean decode);
- ffcv_go from_indexed_dataset(torchvision ImageFolder): the Go-native path;
- ffcv_go from_indexed_dataset over the same items hidden behind a plain
  Python dataset (PIL images; fetched by the default pool='auto');
- FFCV 1.0 from_indexed_dataset(ImageFolder) with num_workers = cores.

Wall seconds, images/s, CPU seconds of the process tree and file size, with
each ffcv_go row as a speed-up over FFCV; Markdown to stdout and
bench/results/writer.md.

    PYTHONPATH=python .venv/bin/python bench/writer.py --data bench/data/imagenet-like --num-images 5000
"""
import argparse
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import MiB, TreeMonitor, cpu_count, log  # noqa: E402


class Opaque:
    """An ImageFolder seen as any Python dataset: items are (PIL image, label)."""

    def __init__(self, ds):
        self.ds = ds

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        return self.ds[i]


def ffcv_go_writer(path, max_res, workers, keep=False, transcode=True, markers=True):
    from ffcv_go import DatasetWriter
    from ffcv_go.fields import IntField, RGBImageField
    return DatasetWriter(path, {"image": RGBImageField(write_mode="jpg", max_resolution=max_res or None,
                                                       jpeg_quality=90, keep_source_jpeg=keep,
                                                       jpeg_transcode=transcode, restart_markers=markers),
                                "label": IntField()}, num_workers=workers, progress=False)


def run(name, fn, path, mon, n):
    gc.collect()
    if os.path.exists(path):
        os.remove(path)
    mark = mon.mark()
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    use = mon.since(mark)
    r = {"seconds": dt, "img_per_s": n / dt, "cpu_s": use["cpu_s"], "size_mib": os.path.getsize(path) / MiB,
         "peak_rss_mib": use["peak_rss_mib"]}
    log(f"  {name}: {dt:.2f} s = {n / dt:.0f} img/s, CPU {use['cpu_s']:.1f} s, {r['size_mib']:.0f} MiB")
    return r


def cases(root, out, max_res, workers):
    import torchvision
    ImageFolder = torchvision.datasets.ImageFolder
    yield "ffcv_go from_image_folder", lambda p: ffcv_go_writer(p, max_res, workers).from_image_folder(root)
    yield ("ffcv_go from_image_folder, restart_markers=False",
           lambda p: ffcv_go_writer(p, max_res, workers, markers=False).from_image_folder(root))
    yield ("ffcv_go from_image_folder, jpeg_transcode=False",
           lambda p: ffcv_go_writer(p, max_res, workers, transcode=False).from_image_folder(root))
    yield ("ffcv_go from_image_folder, keep_source_jpeg",
           lambda p: ffcv_go_writer(p, max_res, workers, keep=True).from_image_folder(root))
    yield ("ffcv_go from_indexed_dataset(ImageFolder)",
           lambda p: ffcv_go_writer(p, max_res, workers).from_indexed_dataset(ImageFolder(root)))
    yield ("ffcv_go from_indexed_dataset(Python dataset of PIL images)",
           lambda p: ffcv_go_writer(p, max_res, workers).from_indexed_dataset(Opaque(ImageFolder(root)),
                                                                              pool_workers=workers))
    try:
        from ffcv.fields import IntField, RGBImageField
        from ffcv.writer import DatasetWriter
    except Exception as e:  # noqa: BLE001
        log(f"FFCV: skipped ({type(e).__name__}: {e})")
        return

    def ffcv(p):
        DatasetWriter(p, {"image": RGBImageField(write_mode="jpg", max_resolution=max_res or None, jpeg_quality=90),
                          "label": IntField()}, num_workers=workers).from_indexed_dataset(ImageFolder(root))
    yield "FFCV 1.0 from_indexed_dataset(ImageFolder)", ffcv


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=os.path.join(HERE, "data", "imagenet-like"))
    p.add_argument("--num-images", type=int, default=5000, help="build --data with this many images if missing")
    p.add_argument("--max-resolution", default="0,256", help="comma-separated; 0 keeps the size (default 0,256)")
    p.add_argument("--workers", type=int, default=cpu_count())
    p.add_argument("--out", default=os.path.join(HERE, "results", "writer.md"))
    a = p.parse_args(argv)
    root, n = harness.image_folder(a.data, a.num_images)
    out_dir = os.path.join(HERE, "data", "writer_bench")
    os.makedirs(out_dir, exist_ok=True)
    import torch  # noqa: F401
    machine = harness.machine_info()
    mon = TreeMonitor()
    results = {}
    try:
        for mr in [int(x) for x in a.max_resolution.split(",")]:
            log(f"max_resolution {mr or 'none'}: {n} images, {a.workers} workers")
            # Untimed: the first write of a process ran 1.6x slower than the same write after it.
            warm = os.path.join(out_dir, "warm-up.beton")
            next(iter(cases(root, out_dir, mr, a.workers)))[1](warm)
            os.remove(warm)
            for i, (name, fn) in enumerate(cases(root, out_dir, mr, a.workers)):
                path = os.path.join(out_dir, f"w{mr}_{i}.beton")
                results[(mr, name)] = run(name, lambda: fn(path), path, mon, n)
                os.remove(path)
    finally:
        mon.stop()
    machine["load_after"] = "%.2f %.2f %.2f" % os.getloadavg()
    lines = [f"{n} JPEGs from {a.data} -> .beton (jpg q90), {a.workers} workers. Machine: {machine['cores']} cores "
             f"({machine['cpu']}), load {machine['load_before']} before / {machine['load_after']} after.", "",
             "| max_resolution | writer | s | img/s | CPU s | MiB | speed-up over FFCV |", "|---|---|---:|---:|---:|---:|---:|"]
    for (mr, name), r in results.items():
        ffcv = results.get((mr, "FFCV 1.0 from_indexed_dataset(ImageFolder)"))
        up = f"{ffcv['seconds'] / r['seconds']:.2f}×" if ffcv else "–"
        lines.append(f"| {mr or 'none'} | {name} | {r['seconds']:.2f} | {r['img_per_s']:.0f} | {r['cpu_s']:.1f} | "
                     f"{r['size_mib']:.0f} | {up} |")
    harness.write_table(lines, a.out)


if __name__ == "__main__":
    main()
