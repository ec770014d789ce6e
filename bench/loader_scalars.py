"""Scalar/array throughput: ffcv_go Loader vs torch DataLoader over a memory-mapped .npy.

Dataset: N samples (default 1,000,000) of IntField (a label) + NDArrayField(float32, (64,)).

  ours        Loader(batch_size, num_workers=cores, order=RANDOM) with
              [IntDecoder(), ToTensor(), Squeeze()] and [NDArrayDecoder(), ToTensor()]
  DataLoader  a Dataset whose __getitem__ returns (label, row) from np.load(mmap_mode='r'),
              same batch size and workers, shuffle=True, persistent workers

Targets: ours >= 5x DataLoader's samples/s; Loader(...) to first batch < 0.3 s.

    PYTHONPATH=python .venv/bin/python bench/loader_scalars.py [--samples 1000000]
"""
import argparse
import gc
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
if os.path.join(REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, HERE)

from harness import TreeMonitor, cpu_count  # noqa: E402

DIM = 64


def log(msg):
    print(f"[scalars {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class _Items:
    """dataset[i] = (label, row) for the writer."""

    def __init__(self, labels, data):
        self.labels, self.data = labels, data

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return int(self.labels[i]), self.data[i]


def build(n, seed, beton, npy_data, npy_labels, workers):
    """Random data, written as a .beton and as two .npy files; returns timings."""
    from ffcv_go.writer import DatasetWriter
    from ffcv_go.fields import IntField, NDArrayField
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 1000, n, dtype=np.int64)
    data = rng.standard_normal((n, DIM), dtype=np.float32)
    t_gen = time.perf_counter() - t0
    t0 = time.perf_counter()
    w = DatasetWriter(beton, {"label": IntField(), "data": NDArrayField(np.dtype("float32"), (DIM,))},
                      num_workers=workers, progress=False)
    w.from_indexed_dataset(_Items(labels, data), chunksize=4096)
    t_beton = time.perf_counter() - t0
    t0 = time.perf_counter()
    np.save(npy_data, data)
    np.save(npy_labels, labels)
    t_npy = time.perf_counter() - t0
    return {"generate_s": t_gen, "beton_write_s": t_beton, "npy_save_s": t_npy,
            "beton_mib": os.path.getsize(beton) / 2**20, "npy_mib": os.path.getsize(npy_data) / 2**20}


class MmapDataset:
    """torch Dataset: (label, row) from np.load(mmap_mode='r'), opened lazily in each worker."""

    def __init__(self, data_path, labels_path):
        self.data_path, self.labels_path = data_path, labels_path
        self.data = self.labels = None
        self.n = len(np.load(labels_path, mmap_mode="r"))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.data is None:
            self.data = np.load(self.data_path, mmap_mode="r")
            self.labels = np.load(self.labels_path, mmap_mode="r")
        return int(self.labels[i]), self.data[i]


def run(make, epochs, mon, name, check):
    mark = mon.mark()
    t0 = time.perf_counter()
    loader = make()
    first = None
    rates = []
    for e in range(epochs):
        emark = mon.mark() if e else mark
        te = time.perf_counter()
        n = 0
        for labels, rows in loader:
            if first is None:
                first = time.perf_counter() - t0
                check(labels, rows)
            n += rows.shape[0]
        dt = time.perf_counter() - te
        use = mon.since(emark)
        rates.append(n / dt)
        log(f"  {name} epoch {e}: {n} samples in {dt:.2f} s = {n / dt:,.0f} samples/s "
            f"(process tree CPU {use['cpu_s']:.1f} s)")
    use = mon.since(mark)
    return loader, {"first_batch_s": first, "epoch_samples_per_s": rates, "best": max(rates),
                    "mean": float(np.mean(rates)), "peak_rss_mib": use["peak_rss_mib"],
                    "peak_pss_mib": use["peak_pss_mib"], "cpu_s": use["cpu_s"]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--samples", type=int, default=1_000_000)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--workers", type=int, default=cpu_count(), help="default: cores")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dir", default=os.path.join(HERE, "data"), help="where the files go (default bench/data)")
    p.add_argument("--reuse", action="store_true", help="reuse existing files (no build time reported)")
    p.add_argument("--skip-dataloader", action="store_true")
    a = p.parse_args(argv)

    import warnings
    import torch
    # Rows of a read-only memmap: torch warns once that the tensor is not writable.
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    from ffcv_go.loader import Loader, OrderOption
    from ffcv_go.fields.decoders import IntDecoder, NDArrayDecoder
    from ffcv_go.transforms import ToTensor, Squeeze

    os.makedirs(a.dir, exist_ok=True)
    stem = os.path.join(a.dir, f"scalars_{a.samples}_s{a.seed}")
    beton, npy_data, npy_labels = stem + ".beton", stem + ".data.npy", stem + ".labels.npy"
    log(f"{cpu_count()} cores, load average {'%.2f %.2f %.2f' % os.getloadavg()}; "
        f"{a.samples:,} samples of (int64 label, float32[{DIM}]), batch {a.batch_size}, {a.workers} workers")
    if a.reuse and all(os.path.exists(f) for f in (beton, npy_data, npy_labels)):
        b = None
        log(f"reusing {beton} and {npy_data}")
    else:
        log(f"building {beton} (ffcv_go DatasetWriter.from_indexed_dataset) and {npy_data}")
        b = build(a.samples, a.seed, beton, npy_data, npy_labels, a.workers)
        log(f"  generated in {b['generate_s']:.1f} s; .beton written in {b['beton_write_s']:.1f} s "
            f"({a.samples / b['beton_write_s']:,.0f} samples/s, {b['beton_mib']:.0f} MiB); "
            f".npy saved in {b['npy_save_s']:.1f} s")
    gc.collect()

    mon = TreeMonitor()
    B = a.batch_size

    def check(labels, rows):
        assert tuple(rows.shape) == (B, DIM) and rows.dtype == torch.float32, (rows.shape, rows.dtype)
        assert tuple(labels.shape) == (B,) and labels.dtype == torch.int64, (labels.shape, labels.dtype)

    log(f"ours: Loader({os.path.basename(beton)}, batch_size={B}, num_workers={a.workers}, order=RANDOM)")

    def make_ours():
        return Loader(beton, batch_size=B, num_workers=a.workers, order=OrderOption.RANDOM, seed=a.seed,
                      pipelines={"label": [IntDecoder(), ToTensor(), Squeeze()],
                                 "data": [NDArrayDecoder(), ToTensor()]})
    loader, ours = run(make_ours, a.epochs, mon, "ours", check)
    loader.close()
    del loader
    gc.collect()
    # Again in a process that has everything imported: what a second Loader costs.
    t0 = time.perf_counter()
    loader = make_ours()
    next(iter(loader))
    ours["first_batch_warm_s"] = time.perf_counter() - t0
    loader.close()
    del loader
    log(f"  ours: first batch {ours['first_batch_s'] * 1000:.0f} ms after the process's first Loader(...), "
        f"{ours['first_batch_warm_s'] * 1000:.0f} ms after a second one")

    dl = None
    if not a.skip_dataloader:
        ds = MmapDataset(npy_data, npy_labels)
        log(f"DataLoader: MmapDataset (np.load mmap_mode='r'), batch_size={B}, num_workers={a.workers}, "
            "shuffle=True, persistent_workers")

        def make_dl():
            kw = {"persistent_workers": True} if a.workers > 0 else {}
            return torch.utils.data.DataLoader(ds, batch_size=B, shuffle=True, num_workers=a.workers,
                                               drop_last=True, **kw)
        loader, dl = run(make_dl, a.epochs, mon, "DataLoader", check)
        it = getattr(loader, "_iterator", None)
        if it is not None:
            it._shutdown_workers()
        del loader, it
    mon.stop()

    rows = [("samples/s, best epoch", f"{ours['best']:,.0f}", dl and f"{dl['best']:,.0f}",
             dl and f"{ours['best'] / dl['best']:.1f}×", "≥ 5×"),
            ("samples/s, mean", f"{ours['mean']:,.0f}", dl and f"{dl['mean']:,.0f}",
             dl and f"{ours['mean'] / dl['mean']:.1f}×", ""),
            ("constructor → first batch, first in process (s)", f"{ours['first_batch_s']:.3f}", dl and f"{dl['first_batch_s']:.3f}",
             dl and f"{ours['first_batch_s'] / dl['first_batch_s']:.2f}×", "ours < 0.3 s"),
            ("same, a second Loader in the process (s)", f"{ours['first_batch_warm_s']:.3f}", None, None, ""),
            ("process-tree CPU s, all epochs", f"{ours['cpu_s']:.1f}", dl and f"{dl['cpu_s']:.1f}",
             dl and f"{ours['cpu_s'] / dl['cpu_s']:.2f}×", ""),
            ("peak RSS / PSS, process tree (MiB)", f"{ours['peak_rss_mib']:.0f} / {ours['peak_pss_mib']:.0f}",
             dl and f"{dl['peak_rss_mib']:.0f} / {dl['peak_pss_mib']:.0f}", "", "")]
    out = [f"## Scalar loading: {a.samples:,} × (IntField, NDArrayField(float32, ({DIM},))), batch {B}, "
           f"{a.workers} workers, RANDOM order, {a.epochs} epochs",
           "", "| metric | ffcv_go Loader | DataLoader (mmap .npy) | ours/DataLoader | target |",
           "|---|---:|---:|---:|---|"]
    out += [f"| {r[0]} | {r[1]} | {r[2] or '–'} | {r[3] or '–'} | {r[4]} |" for r in rows]
    if b:
        out.append(f"\nBuild: data generated in {b['generate_s']:.1f} s; .beton written in {b['beton_write_s']:.1f} s "
                   f"({a.samples / b['beton_write_s']:,.0f} samples/s, {b['beton_mib']:.0f} MiB, "
                   f"DatasetWriter.from_indexed_dataset); .npy saved in {b['npy_save_s']:.1f} s "
                   f"({b['npy_mib']:.0f} MiB).")
    out.append(f"Epochs: ours {', '.join(f'{x:,.0f}' for x in ours['epoch_samples_per_s'])} samples/s"
               + (f"; DataLoader {', '.join(f'{x:,.0f}' for x in dl['epoch_samples_per_s'])} samples/s" if dl else "")
               + f". Load average after: {'%.2f %.2f %.2f' % os.getloadavg()}.")
    verdict = []
    if dl:
        verdict.append(f"throughput ratio {ours['best'] / dl['best']:.1f}× "
                       f"({'meets' if ours['best'] >= 5 * dl['best'] else 'MISSES'} the ≥ 5× target)")
    verdict.append(f"first batch {ours['first_batch_s']:.3f} s "
                   f"({'meets' if ours['first_batch_s'] < 0.3 else 'MISSES'} the < 0.3 s target)")
    out.append("Verdict: " + "; ".join(verdict) + ".")
    table = "\n".join(out) + "\n"
    print()
    print(table, flush=True)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "scalars.md"), "w") as f:
        f.write(table)
    return {"ours": ours, "dataloader": dl, "build": b}


if __name__ == "__main__":
    main()
