"""ImageFolder -> .beton shards through Ray, against the single-process writer.

Same photos, same fields (RGBImageField jpg q90 at --max-resolution, IntField):

- single process: DatasetWriter.from_image_folder (Go threads read, decode,
  resize and encode; --num-cpus threads) writes one file;
- single process, same shards: DatasetWriter.from_indexed_dataset of
  torchvision's ImageFolder, one shard after the other (the Go-native path);
  Ray's shards must be byte-identical to these (checked);
- Ray: ffcv_go.ray.read_image_folder (Ray tasks read the JPEG bytes) then
  write_shards (one task per shard of --rows-per-shard rows, each writer with
  one Go thread) on a local cluster, ray.init(num_cpus=--num-cpus). Run
  --repeats times: the first run includes starting Ray's workers; ray.init
  itself is timed apart.

Wall seconds, images/s, CPU seconds of the process tree (Ray's own processes
included) and output size; each Ray row as a ratio of the single-process
time. Markdown to stdout and bench/results/ray_shards.md.

    make bench-ray                      # BENCH_ARGS="--num-images 500" for a short run
    PYTHONPATH=python .venv/bin/python bench/ray_shards.py --num-images 5000 --rows-per-shard 500
"""
import argparse
import glob
import hashlib
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import MiB, TreeMonitor, log  # noqa: E402


def fields(max_res):
    from ffcv_go.fields import IntField, RGBImageField
    return {"image": RGBImageField(write_mode="jpg", max_resolution=max_res or None, jpeg_quality=90),
            "label": IntField()}


def digest(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def measure(name, fn, mon, n):
    mark = mon.mark()
    t0 = time.perf_counter()
    paths = fn()
    dt = time.perf_counter() - t0
    use = mon.since(mark)
    size = sum(os.path.getsize(p) for p in paths)
    from ffcv_go.reader import Reader
    got = sum(Reader(p).num_samples for p in paths)
    if got != n:
        raise RuntimeError(f"{name}: wrote {got} samples, expected {n}")
    r = {"name": name, "seconds": dt, "img_per_s": n / dt, "cpu_s": use["cpu_s"], "size_mib": size / MiB,
         "files": len(paths)}
    log(f"  {name}: {dt:.2f} s = {n / dt:.0f} img/s, CPU {use['cpu_s']:.1f} s, {len(paths)} file(s), "
        f"{r['size_mib']:.0f} MiB")
    return r


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=os.path.join(HERE, "data", "imagenet-like"))
    p.add_argument("--num-images", type=int, default=5000, help="build --data with this many images if missing")
    p.add_argument("--num-cpus", type=int, default=2, help="Ray's num_cpus, and the single writer's threads")
    p.add_argument("--rows-per-shard", type=int, default=500)
    p.add_argument("--max-resolution", type=int, default=256, help="0 keeps the size")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", default=os.path.join(HERE, "results", "ray_shards.md"))
    a = p.parse_args(argv)
    root, n = harness.image_folder(a.data, a.num_images)
    work = os.path.join(HERE, "data", "ray_shards_bench")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    import ray
    from ffcv_go import DatasetWriter
    from ffcv_go.ray import read_image_folder, shard_name, write_shards

    machine = harness.machine_info()
    mon = TreeMonitor()
    rows = []
    try:
        log(f"{n} images, max_resolution {a.max_resolution or 'none'}, {a.num_cpus} CPUs, "
            f"{a.rows_per_shard} rows per shard")
        single = os.path.join(work, "single.beton")

        def one_process():
            DatasetWriter(single, fields(a.max_resolution), num_workers=a.num_cpus,
                          progress=False).from_image_folder(root)
            return [single]

        rows.append(measure("single process: DatasetWriter.from_image_folder", one_process, mon, n))
        os.remove(single)

        import torchvision
        folder = torchvision.datasets.ImageFolder(root)
        local = os.path.join(work, "local")
        os.makedirs(local)

        def one_process_shards():
            paths = []
            for k, first in enumerate(range(0, n, a.rows_per_shard)):
                paths.append(os.path.join(local, shard_name(k)))
                DatasetWriter(paths[-1], fields(a.max_resolution), num_workers=a.num_cpus,
                              progress=False).from_indexed_dataset(
                    folder, indices=range(first, min(n, first + a.rows_per_shard)))
            return paths

        rows.append(measure("single process, same shards: from_indexed_dataset(ImageFolder)",
                            one_process_shards, mon, n))
        expect = [digest(p) for p in sorted(glob.glob(os.path.join(local, "*.beton")))]

        t0 = time.perf_counter()
        ray.init(num_cpus=a.num_cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        ray.data.DataContext.get_current().enable_progress_bars = False
        init_s = time.perf_counter() - t0
        log(f"  ray.init: {init_s:.1f} s")
        try:
            for k in range(a.repeats):
                out = os.path.join(work, f"shards-{k}")

                def through_ray():
                    return write_shards(read_image_folder(root), fields(a.max_resolution), out,
                                        rows_per_shard=a.rows_per_shard)

                label = "first run (starts workers)" if k == 0 else f"run {k + 1}"
                rows.append(measure(f"Ray write_shards, {label}", through_ray, mon, n))
                got = [digest(p) for p in sorted(glob.glob(os.path.join(out, "*.beton")))]
                if got != expect:
                    raise RuntimeError("Ray's shards differ from the single-process shards")
                shutil.rmtree(out)
        finally:
            ray.shutdown()
    finally:
        mon.stop()
    machine["load_after"] = "%.2f %.2f %.2f" % os.getloadavg()
    base = rows[0]["seconds"]
    lines = [f"{n} JPEGs from {a.data} -> .beton (jpg q90, max_resolution {a.max_resolution or 'none'}), "
             f"{a.num_cpus} CPUs; Ray shards of {a.rows_per_shard} rows; ray.init {init_s:.1f} s (not counted). "
             f"Machine: {machine['cores']} cores ({machine['cpu']}), load {machine['load_before']} before / "
             f"{machine['load_after']} after; ray {ray.__version__}, commit {harness.git_rev()}.", "",
             "| writer | files | s | img/s | CPU s | MiB | time / single process |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['files']} | {r['seconds']:.2f} | {r['img_per_s']:.0f} | {r['cpu_s']:.1f} | "
                     f"{r['size_mib']:.0f} | {r['seconds'] / base:.2f}× |")
    harness.write_table(lines, a.out)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
