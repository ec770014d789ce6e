"""Python stages overlapped with Go: throughput with a ~5 ms/batch custom op
versus the same pipeline without it (target: >= 90% when Go is the
bottleneck). It also prints each run's CPU time per batch and how busy the
cores were: when the op's run keeps every core busy, the overlap is complete
and what is left of the ratio is the op's own CPU time (and the built-in ops
after it, which run as a separate pass over the batch).

The custom op spins for --op-ms holding the GIL (a pure-Python op, the worst
case), or sleeps (--sleep: like numba/torch code that releases it). It runs
on the loader's stage thread, batches_ahead batches ahead, so while it works
the Go workers decode the next batches. Writes the .beton from --data first
if it is missing.

    PYTHONPATH=python .venv/bin/python bench/python_stage_overlap.py \\
        --data bench/data/imagenet-like --beton bench/data/imagenet-like_256.beton
"""
import argparse
import os
import time

import numpy as np


def make_op(ms, sleep):
    from ffcv_go.pipeline.operation import Operation

    class Busy(Operation):
        """Costs ms per batch on the Python side; passes the batch on."""

        def declare_state_and_memory(self, previous_state):
            return previous_state, None

        def generate_code(self):
            def code(inp, dst):
                if sleep:
                    time.sleep(ms / 1000)
                else:
                    end = time.perf_counter() + ms / 1000
                    while time.perf_counter() < end:
                        pass
                return inp
            return code
    return Busy()


def rate(args, custom):
    from ffcv_go import Loader
    from ffcv_go.fields.decoders import IntDecoder, RandomResizedCropRGBImageDecoder
    from ffcv_go.loader import OrderOption
    from ffcv_go.transforms import RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage
    image = [RandomResizedCropRGBImageDecoder((args.res, args.res))]
    if custom:
        image.append(make_op(args.op_ms, args.sleep))
    image += [RandomHorizontalFlip(), ToTensor(), ToTorchImage()]
    loader = Loader(args.beton, batch_size=args.batch_size, num_workers=args.workers, order=OrderOption.RANDOM,
                    seed=0, batches_ahead=args.batches_ahead,
                    pipelines={"image": image, "label": [IntDecoder(), ToTensor(), Squeeze()]})
    best, batches, cpu, wall = 0.0, 0, 0.0, 0.0
    for _ in range(args.epochs):
        t, c, n = time.perf_counter(), _cpu(), 0
        for k, (images, labels) in enumerate(loader):
            n += len(images)
            if args.max_batches and k + 1 >= args.max_batches:
                break
        dt = time.perf_counter() - t
        if n / dt > best:
            best, cpu, wall = n / dt, _cpu() - c, dt
        batches = k + 1
    return {"img_s": best, "batches": batches, "cpu_ms_batch": 1000 * cpu / batches,
            "busy": cpu / wall / len(os.sched_getaffinity(0))}


def _cpu():
    t = os.times()
    return t.user + t.system


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", help="ImageFolder to write --beton from when it is missing")
    p.add_argument("--beton", required=True)
    p.add_argument("--res", type=int, default=160)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--batches-ahead", type=int, default=3)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--max-batches", type=int, default=0, help="stop an epoch early (0: whole epochs)")
    p.add_argument("--op-ms", type=float, default=5.0)
    p.add_argument("--sleep", action="store_true", help="the op sleeps (releases the GIL) instead of spinning")
    a = p.parse_args()
    if not os.path.exists(a.beton):
        from ffcv_go import DatasetWriter
        from ffcv_go.fields import IntField, RGBImageField
        DatasetWriter(a.beton, {"image": RGBImageField(write_mode="jpg", max_resolution=256),
                                "label": IntField()}).from_image_folder(a.data)
    from ffcv_go.pipeline import Compiler
    Compiler.set_enabled(False)  # the op is plain Python on purpose
    without = rate(a, False)
    with_op = rate(a, True)
    how = "sleeping" if a.sleep else "spinning, GIL held"
    print(f"| RRC {a.res} + flip, batch {a.batch_size}, {a.workers} workers, {without['batches']} batches/epoch "
          f"| img/s | CPU ms per batch | cores busy |")
    print("|---|---:|---:|---:|")
    for name, r in (("without custom op", without), (f"with a {a.op_ms:g} ms/batch custom op ({how})", with_op)):
        print(f"| {name} | {r['img_s']:.0f} | {r['cpu_ms_batch']:.1f} | {100 * r['busy']:.0f}% |")
    print(f"| ratio (target >= 0.90 when Go is the bottleneck) | {with_op['img_s'] / without['img_s']:.2f} | | |")
    # With every core kept busy, the op's run can go no faster than its CPU
    # time allows: the ratio that perfect overlap would give.
    bound = without["cpu_ms_batch"] / with_op["cpu_ms_batch"] / without["busy"]
    print(f"| ratio if the op's run kept every core busy | {min(1.0, bound):.2f} | | |")


if __name__ == "__main__":
    main()
