"""Synthetic detection/segmentation scenes with a known truth: coloured
rectangles (one pure colour per object, never overlapping) over a real
photo whose values are squeezed into [64, 191], so no background pixel is
ever taken for an object. Shared by the detection tests, example and
benchmark."""
import numpy as np

# Object k (label k + 1) has COLOURS[k]: channels 0 or 255, far from any background value
# (black is left for the padding of shifts and crops).
COLOURS = np.array([(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (255, 0, 255), (0, 255, 255),
                    (255, 255, 255)], dtype=np.uint8)
BG_LO, BG_HI = 64, 191


def backgrounds(photos, count=8, side=256):
    """count (side, side, 3) uint8 textures: crops of the photos (noise when
    there are none), squeezed into [BG_LO, BG_HI]."""
    from PIL import Image
    rng = np.random.default_rng(0)
    out = []
    for k in range(count):
        if photos:
            with Image.open(photos[k % len(photos)]) as im:
                im = im.convert("RGB")
                w, h = im.size
                s = min(w, h) // 2
                x, y = int(rng.integers(0, w - s + 1)), int(rng.integers(0, h - s + 1))
                arr = np.asarray(im.crop((x, y, x + s, y + s)).resize((side, side), Image.BILINEAR))
        else:
            arr = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
        out.append((BG_LO + arr.astype(np.uint16) * (BG_HI - BG_LO) // 255).astype(np.uint8))
    return out


def scene(i, bgs, height=None, width=None, max_objects=6):
    """Scene i: (image (H, W, 3) uint8, boxes (N, 4) float32 xyxy, labels (N,)
    int64, mask (H, W) uint8 with label k + 1 under object k). Sizes vary
    with i unless given; some scenes have no object."""
    rng = np.random.default_rng(1000 + i)
    h = height or int(rng.integers(120, 260))
    w = width or int(rng.integers(120, 260))
    bg = bgs[i % len(bgs)]
    ys = (np.arange(h) * bg.shape[0] // h)[:, None]
    xs = (np.arange(w) * bg.shape[1] // w)[None, :]
    img = bg[ys, xs].copy()
    mask = np.zeros((h, w), np.uint8)
    n = int(rng.integers(0, max_objects + 1)) if i % 7 else 0
    # A 3x3 grid of cells keeps objects apart; each takes a random box inside its cell.
    cells = rng.permutation(9)[:n]
    kinds = rng.permutation(len(COLOURS))[:n]
    boxes, labels = [], []
    for cell, k in zip(cells, kinds):
        cy, cx = divmod(int(cell), 3)
        y0c, y1c = cy * h // 3, (cy + 1) * h // 3
        x0c, x1c = cx * w // 3, (cx + 1) * w // 3
        bh = int(rng.integers(max(4, (y1c - y0c) // 4), y1c - y0c - 1))
        bw = int(rng.integers(max(4, (x1c - x0c) // 4), x1c - x0c - 1))
        y0 = int(rng.integers(y0c, y1c - bh))
        x0 = int(rng.integers(x0c, x1c - bw))
        img[y0:y0 + bh, x0:x0 + bw] = COLOURS[k]
        mask[y0:y0 + bh, x0:x0 + bw] = k + 1
        boxes.append((x0, y0, x0 + bw, y0 + bh))
        labels.append(k + 1)
    return img, np.asarray(boxes, np.float32).reshape(-1, 4), np.asarray(labels, np.int64), mask


class SceneDataset:
    """n scenes as an indexed dataset of (image, boxes, labels, mask)."""

    def __init__(self, n, photos=(), height=None, width=None):
        self.n, self.height, self.width = n, height, width
        self.bgs = backgrounds(list(photos))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return scene(i, self.bgs, self.height, self.width)


def write_yolo(root, splits, photos=(), height=None, width=None, max_objects=6, quality=92, task="detect",
               bg_side=256):
    """A YOLO dataset of scenes in the Ultralytics layout under root:
    images/<split>/<i>.jpg, labels/<split>/<i>.txt (``cls cx cy w h``
    normalized, cls = label - 1; a scene without objects gets an empty
    file) and data.yaml with a name per colour. splits maps a split name
    to its range of scene indices. task 'segment' writes each rectangle as
    a polygon of its 4 corners, 'pose' adds its top-left and bottom-right
    corners as 2 visible keypoints. bg_side: the side of the photo crops
    behind the objects. Returns the YAML's path."""
    import os
    from PIL import Image
    bgs = backgrounds(list(photos), side=bg_side)
    for split, indices in splits.items():
        os.makedirs(os.path.join(root, "images", split), exist_ok=True)
        os.makedirs(os.path.join(root, "labels", split), exist_ok=True)
        for i in indices:
            img, boxes, labels, _ = scene(i, bgs, height, width, max_objects)
            h, w = img.shape[:2]
            Image.fromarray(img).save(os.path.join(root, "images", split, f"{i:06d}.jpg"), quality=quality)
            with open(os.path.join(root, "labels", split, f"{i:06d}.txt"), "w") as f:
                for (x0, y0, x1, y1), k in zip(boxes.tolist(), labels.tolist()):
                    x0, x1, y0, y1 = x0 / w, x1 / w, y0 / h, y1 / h
                    if task == "segment":
                        f.write(f"{k - 1} {x0:.6f} {y0:.6f} {x1:.6f} {y0:.6f} {x1:.6f} {y1:.6f} {x0:.6f} {y1:.6f}\n")
                        continue
                    f.write(f"{k - 1} {(x0 + x1) / 2:.6f} {(y0 + y1) / 2:.6f} {x1 - x0:.6f} {y1 - y0:.6f}")
                    f.write(f" {x0:.6f} {y0:.6f} 2 {x1:.6f} {y1:.6f} 2\n" if task == "pose" else "\n")
    yaml = os.path.join(root, "data.yaml")
    with open(yaml, "w") as f:
        f.write(f"path: {os.path.abspath(root)}\n")
        for split in splits:
            f.write(f"{split}: images/{split}\n")
        f.write("names:\n" + "".join(f"  {k}: colour{k}\n" for k in range(len(COLOURS))))
        if task == "pose":
            f.write("kpt_shape: [2, 3]\nflip_idx: [0, 1]\n")
    return yaml
