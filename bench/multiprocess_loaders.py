"""Several loader processes on one machine, in the shape of the "loader in
isolation" benchmark of MosaicML's "Composer + FFCV: Faster Together".

N processes (N = 1, 2, 4 by default), each with its own loader over its 1/N
share of the data (rank r of N, as one process per GPU would be), all started
together; no model. Total img/s = the images all processes loaded / the wall
time from the common start to the last process's end. Two settings of the
workers per process:

- share: ffcv_go at its default (num_workers=-1, which with LOCAL_WORLD_SIZE=N
  is cores // N, at least 1); DataLoader with num_workers = cores // N (at
  least 1): the usual per-GPU setting.
- over: workers = cores in every process, N x oversubscribed.

ffcv_go reads the .beton (JPEG, max_resolution 256; written if missing);
torch.utils.data.DataLoader decodes the ImageFolder's original JPEGs with
PIL (as in FFCV's and the post's comparisons) with a DistributedSampler,
persistent workers. Both: RandomResizedCrop --res + flip, uint8 NCHW, batch
--batch-size, RANDOM order. Each process first runs one untimed epoch (warm
page cache, workers started), then --epochs timed ones.

    PYTHONPATH=python .venv/bin/python bench/multiprocess_loaders.py --data bench/data/imagenet-like

The goal: with N = 4, at least 90% of N = 1's total img/s, in both settings. Markdown to bench/results/multiprocess.md.
"""
import argparse
import json
import multiprocessing as mp
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import (_ffcv_go_pipelines, _cpu_ticks, check_batch, cpu_count, machine_info, git_rev,  # noqa: E402
                     process_tree, TICK)

GOAL = 0.90


def _tree_cpu_s():
    """CPU seconds of this process and its live children (DataLoader's workers)."""
    return sum(_cpu_ticks(p) or 0 for p in process_tree()) / TICK


def _worker(kind, rank, world, workers, args, start, queue):
    """One process: its own loader over rank's share; reports images, start and end
    times, and the CPU seconds its process tree spent in between."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
    try:
        import torch
        torch.set_num_threads(1)  # no model here: the main thread only hands batches on
        if kind == "ffcv_go":
            from ffcv_go.loader import Loader, OrderOption
            loader = Loader(args.beton, batch_size=args.batch_size, num_workers=workers, order=OrderOption.RANDOM,
                            distributed=True, seed=args.seed, pipelines=_ffcv_go_pipelines(args.res),
                            drop_last=True)
            used_workers = loader.num_workers

            def epoch(e):
                return loader
        else:
            import torchvision
            from torchvision import transforms as T
            tf = T.Compose([T.RandomResizedCrop(args.res, antialias=True), T.RandomHorizontalFlip(),
                            T.PILToTensor()])
            ds = torchvision.datasets.ImageFolder(args.data, transform=tf)
            sampler = torch.utils.data.DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True,
                                                          seed=args.seed)
            loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, sampler=sampler,
                                                 num_workers=workers, drop_last=True, persistent_workers=True,
                                                 prefetch_factor=2)
            used_workers = workers

            def epoch(e):
                sampler.set_epoch(e)
                return loader
        n = 0
        for i, (images, labels) in enumerate(epoch(0)):  # warm-up: untimed
            if i == 0:
                check_batch(images, labels, args.res)
        start.wait()
        t0, c0 = time.monotonic(), _tree_cpu_s()  # monotonic is system-wide: comparable between processes
        for e in range(1, args.epochs + 1):
            for images, labels in epoch(e):
                n += images.shape[0]
        t1, c1 = time.monotonic(), _tree_cpu_s()
        if kind == "ffcv_go":
            loader.close()
        queue.put({"rank": rank, "images": n, "t0": t0, "t1": t1, "cpu_s": c1 - c0,
                   "workers": used_workers})
    except BaseException as e:  # noqa: BLE001 - reported by the parent, which then fails
        queue.put({"rank": rank, "error": f"{type(e).__name__}: {e}"})
        raise


def run(kind, world, setting, args):
    cores = cpu_count()
    if setting == "over":
        workers = cores
    elif kind == "ffcv_go":
        workers = -1  # the Loader's default rule
    else:
        workers = max(1, cores // world)
    ctx = mp.get_context("spawn")
    start, queue = ctx.Barrier(world), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(kind, r, world, workers, args, start, queue)) for r in range(world)]
    for p in procs:
        p.start()
    results = []
    deadline = time.monotonic() + args.timeout
    while len(results) < world:
        try:
            results.append(queue.get(timeout=max(1.0, deadline - time.monotonic())))
        except Exception:  # noqa: BLE001 - queue.Empty: a process died or hung
            break
        if "error" in results[-1]:
            break
    for p in procs:
        p.join(timeout=30)
        if p.is_alive():
            p.kill()
    errors = [r["error"] for r in results if "error" in r]
    if errors or len(results) < world:
        raise SystemExit(f"{kind} N={world} {setting}: {errors or 'a process exited without a result'}")
    images = sum(r["images"] for r in results)
    wall = max(r["t1"] for r in results) - min(r["t0"] for r in results)
    cpu = sum(r["cpu_s"] for r in results)
    return {"images": images, "wall_s": wall, "img_per_s": images / wall, "cpu_ms_per_img": 1000 * cpu / images,
            "workers": sorted({r["workers"] for r in results})}


def ensure_beton(args):
    if os.path.exists(args.beton):
        return
    from ffcv_go.writer import DatasetWriter
    from ffcv_go.fields import RGBImageField, IntField
    print(f"writing {args.beton} from {args.data} (jpg, max_resolution 256)", flush=True)
    DatasetWriter(args.beton, {"image": RGBImageField(write_mode="jpg", max_resolution=256, jpeg_quality=90),
                               "label": IntField()}, progress=False).from_image_folder(args.data)


def make_table(r, args):
    cores = r["machine"]["cores"]
    lines = [f"{r['num_images']} images (`{args.data}`), RandomResizedCrop {args.res} + flip, uint8 NCHW, batch "
             f"{args.batch_size}, RANDOM, 1 warm-up + {args.epochs} timed epochs per process; {cores} cores; "
             f"load average {r['machine']['load_before']} before, {r['machine']['load_after']} after.", "",
             "| loader | workers per process | " + " | ".join(f"N={n} img/s" for n in args.procs)
             + f" | N={args.procs[-1]} / N={args.procs[0]} | CPU ms/img " + ", ".join(f"N={n}" for n in args.procs)
             + " |",
             "|---|---|" + "---:|" * (len(args.procs) + 2)]
    for kind in args.kinds:
        for setting in args.settings:
            row = r["runs"][kind][setting]
            base, last = row[str(args.procs[0])], row[str(args.procs[-1])]
            ratio = last["img_per_s"] / base["img_per_s"]
            if setting == "over":
                wdesc = f"{cores} (= cores, oversubscribed)"
            else:
                wdesc = ("default: " if kind == "ffcv_go" else "") + ", ".join(
                    f"{'/'.join(map(str, row[str(n)]['workers']))}" for n in args.procs) + " (cores // N)"
            mark = " ✓" if ratio >= GOAL else " ✗"
            lines.append(f"| {kind} | {wdesc} | " + " | ".join(f"{row[str(n)]['img_per_s']:.0f}" for n in args.procs)
                         + f" | {100 * ratio:.0f}%{mark} | "
                         + ", ".join(f"{row[str(n)]['cpu_ms_per_img']:.2f}" for n in args.procs) + " |")
    lines += ["", f"Goal: N={args.procs[-1]} at least {100 * GOAL:.0f}% of N={args.procs[0]} (✓/✗). Total img/s = "
              "images loaded by all processes / wall time from their common start to the last one's end. "
              "ffcv_go reads the .beton; DataLoader decodes the original JPEGs with PIL. CPU ms/img: CPU time of "
              "every process tree over the timed epochs / images (the cost of oversubscription, and less "
              "sensitive than img/s to other load on the machine)."]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=os.path.join(HERE, "data", "imagenet-like"), help="ImageFolder root")
    p.add_argument("--num-images", type=int, default=None, help="build --data with make_dataset.py if missing")
    p.add_argument("--beton", default=None, help="default bench/data/<data>_256.beton (written if missing)")
    p.add_argument("--procs", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--settings", nargs="+", choices=["share", "over"], default=["share", "over"])
    p.add_argument("--kinds", nargs="+", choices=["ffcv_go", "dataloader"], default=["ffcv_go", "dataloader"])
    p.add_argument("--res", type=int, default=224)
    p.add_argument("--batch-size", type=int, default=64, help="per process")
    p.add_argument("--epochs", type=int, default=2, help="timed epochs (after one warm-up epoch)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=1800, help="seconds per configuration")
    p.add_argument("--out-md", default=os.path.join(HERE, "results", "multiprocess.md"))
    p.add_argument("--out-json", default=None)
    args = p.parse_args(argv)
    args.data = os.path.abspath(args.data)
    if args.beton is None:
        args.beton = os.path.join(HERE, "data", f"{os.path.basename(args.data.rstrip('/'))}_256.beton")
    return args


def main(argv=None):
    args = parse_args(argv)
    if not os.path.isdir(args.data):
        if not args.num_images:
            raise SystemExit(f"{args.data} does not exist: run `make demo`, or pass --num-images N to build it")
        from make_dataset import make_image_folder
        make_image_folder(args.data, args.num_images, 10, args.seed)
    ensure_beton(args)
    from ffcv_go.reader import Reader
    reader = Reader(args.beton)
    r = {"git": git_rev(), "machine": machine_info(), "num_images": reader.num_samples, "args": vars(args),
         "runs": {}}
    reader.close()
    for kind in args.kinds:
        for setting in args.settings:
            for n in args.procs:
                out = run(kind, n, setting, args)
                r["runs"].setdefault(kind, {}).setdefault(setting, {})[str(n)] = out
                print(f"{kind:10s} {setting:5s} N={n}: {out['img_per_s']:7.0f} img/s total "
                      f"({out['images']} images in {out['wall_s']:.2f} s, {out['cpu_ms_per_img']:.2f} CPU ms/img, "
                      f"workers {out['workers']})", flush=True)
    r["machine"]["load_after"] = "%.2f %.2f %.2f" % os.getloadavg()
    table = make_table(r, args)
    print()
    print(table, flush=True)
    if args.out_md:
        os.makedirs(os.path.dirname(os.path.abspath(args.out_md)), exist_ok=True)
        with open(args.out_md, "w") as f:
            f.write(table)
    if args.out_json:
        with open(args.out_json, "w") as f:
            json.dump(r, f, indent=1, default=str)
    return r


if __name__ == "__main__":
    main()
