"""Video clips with a known motion: a camera moving over a real photo
(Debian's wallpapers, as bench/make_dataset.py finds them), encoded to mp4
(H.264) with PyAV. The class is the motion -- pan left, right, up or down,
zoom in or out -- which no single frame shows. Clip i depends only on
(seed, i). Shared by examples/train_video.py, bench/video.py and the tests.

    python bench/motion_clips.py /tmp/clips --num-clips 60 --frames 24 --size 96
"""
import argparse
import os
import sys

import numpy as np

MOTIONS = ("pan_left", "pan_right", "pan_up", "pan_down", "zoom_in", "zoom_out")
SOURCE_SIDE = 480  # photos are decoded (JPEG draft mode) and downscaled to about this


def photos(limit=12):
    """Up to limit photo paths from Debian's wallpaper packages."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import make_dataset
    return make_dataset.find_photos()[:limit]


def load_sources(paths, side=SOURCE_SIDE):
    """The photos as (H, W, 3) uint8 arrays, longer side about side px."""
    from PIL import Image
    out = []
    for p in paths:
        with Image.open(p) as im:
            im.draft("RGB", (side, side))
            im = im.convert("RGB")
            s = side / max(im.size)
            if s < 1:
                im = im.resize((max(1, round(im.width * s)), max(1, round(im.height * s))), Image.BILINEAR)
            out.append(np.asarray(im))
    return out


def clip_frames(src, motion, frames, size, rng):
    """frames (H, W, 3) uint8 views of src (size: W = H, or (W, H)) by a
    camera doing motion: a window of the frames' aspect that moves a random
    40-60% of its height (pans) or changes its size by a random factor of
    1.5-2 (zooms) over the clip, starting at a random place."""
    from PIL import Image
    fw, fh = (size, size) if np.isscalar(size) else size
    aspect = fw / fh
    h, w = src.shape[:2]
    img = Image.fromarray(src)
    side0 = rng.uniform(0.35, 0.5) * min(h, w / aspect)  # the window's height
    if motion in ("zoom_in", "zoom_out"):
        big, small = side0, side0 / rng.uniform(1.5, 2.0)
        sides = np.linspace(big, small, frames) if motion == "zoom_in" else np.linspace(small, big, frames)
        cx = rng.uniform(big * aspect / 2, w - big * aspect / 2)
        cy = rng.uniform(big / 2, h - big / 2)
        xs, ys = np.full(frames, cx), np.full(frames, cy)
    else:
        sides = np.full(frames, side0)
        travel = rng.uniform(0.4, 0.6) * side0
        dx, dy = {"pan_left": (-1, 0), "pan_right": (1, 0), "pan_up": (0, -1), "pan_down": (0, 1)}[motion]
        # The camera pans left: the scene moves right in the frame.
        x0 = rng.uniform(side0 * aspect / 2 + travel * (dx < 0), w - side0 * aspect / 2 - travel * (dx > 0))
        y0 = rng.uniform(side0 / 2 + travel * (dy < 0), h - side0 / 2 - travel * (dy > 0))
        t = np.linspace(0, 1, frames)
        xs, ys = x0 + dx * travel * t, y0 + dy * travel * t
    out = np.empty((frames, fh, fw, 3), np.uint8)
    for k in range(frames):
        s = sides[k] / 2
        box = (xs[k] - s * aspect, ys[k] - s, xs[k] + s * aspect, ys[k] + s)
        out[k] = np.asarray(img.transform((fw, fh), Image.EXTENT, box, Image.BILINEAR))
    return out


def write_mp4(path, frames, fps=25, crf=20, codec="libx264", faststart=False):
    """Encodes (T, H, W, 3) uint8 frames to path with PyAV (H.264 by default, yuv420p;
    the container follows the extension: mp4, mkv, webm with codec="libvpx");
    faststart puts the index (moov) before the frames."""
    import av
    with av.open(str(path), "w", options={"movflags": "faststart"} if faststart else {}) as out:
        stream = out.add_stream(codec, rate=fps)
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = "yuv420p"
        if codec == "libx264":
            stream.options = {"crf": str(crf), "preset": "veryfast"}
        for f in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def make_clips(root, num_clips, frames=24, size=96, seed=0, fps=25, sources=None, ext=".mp4"):
    """Writes clip i of class i % 6 to root/<motion>/clip_<i>.mp4; returns
    [(path, label)] in clip order. size: W = H, or (W, H). sources: photos
    as arrays (default: the wallpapers, loaded once)."""
    if sources is None:
        paths = photos()
        if not paths:
            raise SystemExit("no photos found: install Debian's mate-backgrounds or lomiri-wallpapers-*")
        sources = load_sources(paths)
    items = []
    for i in range(num_clips):
        rng = np.random.default_rng([seed, i])
        label = i % len(MOTIONS)
        src = sources[int(rng.integers(len(sources)))]
        d = os.path.join(root, MOTIONS[label])
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, f"clip_{i:05d}{ext}")
        if not os.path.exists(path):
            write_mp4(path + ".tmp" + ext, clip_frames(src, MOTIONS[label], frames, size, rng), fps=fps)
            os.replace(path + ".tmp" + ext, path)
        items.append((path, label))
    return items


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--num-clips", type=int, default=60)
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--size", type=int, nargs="+", default=[96], help="W = H, or W H")
    ap.add_argument("--fps", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    size = a.size[0] if len(a.size) == 1 else tuple(a.size[:2])
    items = make_clips(a.root, a.num_clips, a.frames, size, a.seed, a.fps)
    print(f"{len(items)} clips under {a.root}")


if __name__ == "__main__":
    main()
