"""How often each image is a mosaic's partner in one epoch: Ultralytics'
buffer of the images each worker loaded last against uniform draws over the
dataset (ffcv-go's MosaicRGBImageDecoder). A simulation of the draws only
(no images): the numbers of docs/guides/yolo.md's table.

    python bench/mosaic_partners.py [--batch 16] [--workers 2]
"""
import argparse

import numpy as np


def buffered(rng, n, batch, workers, tiles=4):
    """Ultralytics: each worker appends every image it loads to its own
    buffer (at most min(n, 8 * batch, 1000), the oldest dropped; empty when
    the worker starts) and draws the partners from it."""
    k = min(n, batch * 8, 1000)
    order = rng.permutation(n)
    batches = [order[i:i + batch] for i in range(0, n, batch)]
    partners = []
    for w in range(workers):
        buf = []
        for b in batches[w::workers]:
            for i in b:
                buf.append(i)
                if len(buf) >= k:
                    buf.pop(0)
                partners.append((i, rng.choice(buf, tiles - 1)))
    return partners


def uniform(rng, n, tiles=4):
    return [(i, rng.integers(0, n, tiles - 1)) for i in range(n)]


def stats(partners, n):
    count = np.bincount(np.concatenate([p for _, p in partners]), minlength=n)
    twice = np.mean([(p == i).any() for i, p in partners])
    repeated = np.mean([len(set(p.tolist()) | {i}) < len(p) + 1 for i, p in partners])
    return count.mean(), count.std(), (count == 0).mean(), twice, repeated


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print("| Images | Partner draws | Partner count per image: mean, std | Never a partner | "
          "Mosaics showing the sample twice | Mosaics with a repeated image |")
    print("|---|---|---|---|---|---|")
    for n in (1000, 10000):
        for name, partners in (("Ultralytics' buffer", buffered(rng, n, a.batch, a.workers)),
                               ("uniform (ours)", uniform(rng, n))):
            mean, std, never, twice, rep = stats(partners, n)
            print(f"| {n:,} | {name} | {mean:.2f}, {std:.2f} | {never:.1%} | {twice:.2%} | {rep:.2%} |")


if __name__ == "__main__":
    main()
