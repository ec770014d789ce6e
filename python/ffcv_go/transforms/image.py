"""Image and label transforms. Each runs fused in Go when it directly follows
the decoder or other Go-run operations on the CPU, and as the torch code in
``_apply`` otherwise (e.g. after a custom operation or on a GPU tensor)."""
import numpy as np
import torch

from ._base import Transform, replace_state, torch_dtype


def _is_cpu_image(state):
    return state.jit_mode and state.shape is not None and len(state.shape) == 3 and np.dtype(state.dtype) == np.uint8


def _hwc(x):
    """View a batch as (B, H, W, C) whatever its layout (NCHW views are permuted back)."""
    if x.dim() == 4 and x.shape[-1] not in (1, 3, 4) and x.shape[1] in (1, 3, 4):
        return x.permute(0, 2, 3, 1), True
    return x, False


def _unhwc(x, permuted):
    return x.permute(0, 3, 1, 2) if permuted else x


def _coin(ctx, n, p, device):
    return torch.rand(n, generator=ctx.generator(), device="cpu").to(device) < p


class _RandomImage(Transform):
    def _go_spec(self, state):
        return self._spec() if _is_cpu_image(state) else None


class RandomHorizontalFlip(_RandomImage):
    """Flips each image left-right with probability flip_prob."""

    def __init__(self, flip_prob=0.5):
        super().__init__()
        self.flip_prob = float(flip_prob)

    def _spec(self):
        return {"op": "flip_h", "p": self.flip_prob}

    def _apply(self, x, ctx):
        x, perm = _hwc(x)
        m = _coin(ctx, len(x), self.flip_prob, x.device)
        out = torch.where(m[:, None, None, None], x.flip(2), x)
        return _unhwc(out, perm)


class RandomVerticalFlip(_RandomImage):
    """Flips each image upside down with probability flip_prob."""

    def __init__(self, flip_prob=0.5):
        super().__init__()
        self.flip_prob = float(flip_prob)

    def _spec(self):
        return {"op": "flip_v", "p": self.flip_prob}

    def _apply(self, x, ctx):
        x, perm = _hwc(x)
        m = _coin(ctx, len(x), self.flip_prob, x.device)
        return _unhwc(torch.where(m[:, None, None, None], x.flip(1), x), perm)


class RandomTranslate(_RandomImage):
    """Pads by `padding` with fill and takes a random window of the original size."""

    def __init__(self, padding, fill=(0, 0, 0)):
        super().__init__()
        self.padding, self.fill = int(padding), tuple(int(v) for v in fill)

    def _spec(self):
        return {"op": "translate", "padding": self.padding, "fill": list(self.fill)}

    def _apply(self, x, ctx):
        x, perm = _hwc(x)
        n, h, w, c = x.shape
        p = self.padding
        big = torch.empty((n, h + 2 * p, w + 2 * p, c), dtype=x.dtype, device=x.device)
        big[:] = torch.tensor(self.fill, dtype=x.dtype, device=x.device)
        big[:, p:p + h, p:p + w] = x
        g = ctx.generator()
        ys = torch.randint(0, 2 * p + 1, (n,), generator=g)
        xs = torch.randint(0, 2 * p + 1, (n,), generator=g)
        out = torch.stack([big[i, ys[i]:ys[i] + h, xs[i]:xs[i] + w] for i in range(n)]) if n else x
        return _unhwc(out, perm)


class Cutout(_RandomImage):
    """Fills a random crop_size square (inside the image) with fill."""

    def __init__(self, crop_size, fill=(0, 0, 0)):
        super().__init__()
        self.crop_size, self.fill = int(crop_size), tuple(int(v) for v in fill)

    def _spec(self):
        return {"op": "cutout", "size": self.crop_size, "fill": list(self.fill)}

    def _apply(self, x, ctx):
        x, perm = _hwc(x)
        x = x.clone()
        n, h, w, _ = x.shape
        s = self.crop_size
        g = ctx.generator()
        fill = torch.tensor(self.fill, dtype=x.dtype, device=x.device)
        for i in range(n):
            y0 = int(torch.randint(0, h - s + 1, (1,), generator=g))
            x0 = int(torch.randint(0, w - s + 1, (1,), generator=g))
            x[i, y0:y0 + s, x0:x0 + s] = fill
        return _unhwc(x, perm)


def _gray(x):
    return 0.299 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2]


class _Blend(_RandomImage):
    _kind = None

    def __init__(self, magnitude, p=0.5):
        super().__init__()
        self.magnitude, self.p = float(magnitude), float(p)

    def _spec(self):
        return {"op": self._kind, "magnitude": self.magnitude, "p": self.p}

    def _apply(self, x, ctx):
        x, perm = _hwc(x)
        n = len(x)
        g = ctx.generator()
        apply = torch.rand(n, generator=g) < self.p
        lo = max(0.0, 1 - self.magnitude)
        f = (lo + torch.rand(n, generator=g, dtype=torch.float64) * (1 + self.magnitude - lo)).to(x.device)
        xf = x.double()
        if self._kind == "brightness":
            other = torch.zeros_like(xf)
        elif self._kind == "contrast":
            other = _gray(xf).mean(dim=(1, 2))[:, None, None, None].expand_as(xf)
        else:
            other = _gray(xf)[..., None].expand_as(xf)
        f = f[:, None, None, None]
        out = (f * xf + (1 - f) * other).clamp(0, 255).to(x.dtype)
        out = torch.where(apply.to(x.device)[:, None, None, None], out, x)
        return _unhwc(out, perm)


class RandomBrightness(_Blend):
    """Scales each image by U(max(0, 1-m), 1+m) with probability p."""
    _kind = "brightness"


class RandomContrast(_Blend):
    """Blends each image with its mean grey level, with probability p."""
    _kind = "contrast"


class RandomSaturation(_Blend):
    """Blends each image with its greyscale version, with probability p."""
    _kind = "saturation"


class RandomGrayscale(_RandomImage):
    """Turns each image grey (ITU-R 601 luma in every channel) with probability p."""

    def __init__(self, p=0.1):
        super().__init__()
        self.p = float(p)

    def _spec(self):
        return {"op": "grayscale", "p": self.p}

    def _apply(self, x, ctx):
        x, perm = _hwc(x)
        m = _coin(ctx, len(x), self.p, x.device)
        g = _gray(x.double()).clamp(0, 255).to(x.dtype)[..., None].expand_as(x)
        return _unhwc(torch.where(m[:, None, None, None], g, x), perm)


class RandomSolarization(_RandomImage):
    """Inverts pixels >= threshold with probability p."""

    def __init__(self, threshold=128, p=0.5):
        super().__init__()
        self.threshold, self.p = int(threshold), float(p)

    def _spec(self):
        return {"op": "solarize", "threshold": self.threshold, "p": self.p}

    def _apply(self, x, ctx):
        m = _coin(ctx, len(x), self.p, x.device)
        sol = torch.where(x >= self.threshold, 255 - x, x)
        return torch.where(m.view(-1, *([1] * (x.dim() - 1))), sol, x)


class RandomCrop(_RandomImage):
    """Pads by padding (zeros) and takes a random size window (torchvision's RandomCrop)."""

    def __init__(self, size, padding=0):
        super().__init__()
        self.size = (int(size), int(size)) if np.isscalar(size) else (int(size[0]), int(size[1]))
        self.padding = int(padding)

    def declare_state_and_memory(self, previous_state):
        shape = previous_state.shape
        return replace_state(previous_state, shape=(*self.size, shape[2])), None

    def _spec(self):
        return {"op": "random_crop", "size": list(self.size), "padding": self.padding}

    def _apply(self, x, ctx):
        x, perm = _hwc(x)
        n, h, w, c = x.shape
        p = self.padding
        big = torch.zeros((n, h + 2 * p, w + 2 * p, c), dtype=x.dtype, device=x.device)
        big[:, p:p + h, p:p + w] = x
        g = ctx.generator()
        th, tw = self.size
        out = []
        for i in range(n):
            top = int(torch.randint(0, h + 2 * p - th + 1, (1,), generator=g))
            left = int(torch.randint(0, w + 2 * p - tw + 1, (1,), generator=g))
            out.append(big[i, top:top + th, left:left + tw])
        return _unhwc(torch.stack(out) if out else x[:, :th, :tw], perm)


class NormalizeImage(Transform):
    """(x - mean) / std per channel, as `type` (np.float16 or np.float32).
    uint8 (B, H, W, C) on the CPU is done in Go; a tensor on the GPU (e.g.
    after ToDevice and ToTorchImage) is normalised there."""

    def __init__(self, mean, std, type):
        super().__init__()
        self.mean = np.asarray(mean, dtype=np.float32)
        self.std = np.asarray(std, dtype=np.float32)
        self.type = type
        if self.mean.shape != self.std.shape or self.mean.ndim != 1:
            raise ValueError("mean and std need one value per channel")

    def declare_state_and_memory(self, previous_state):
        from ._base import numpy_dtype
        dt = self.type if not previous_state.jit_mode else numpy_dtype(self.type)
        if not previous_state.jit_mode:
            dt = torch_dtype(self.type)
        return replace_state(previous_state, dtype=dt), None

    def _go_spec(self, state):
        from ._base import numpy_dtype
        dt = numpy_dtype(self.type)
        if not _is_cpu_image(state) or dt not in (np.float16, np.float32):
            return None
        return {"op": "normalize", "mean": self.mean.tolist(), "std": self.std.tolist(), "dtype": dt.str}

    def _apply(self, x, ctx):
        dt = torch_dtype(self.type)
        c = len(self.mean)
        if x.dim() == 4 and x.shape[1] == c and x.shape[-1] != c:
            shape = (1, c, 1, 1)
        else:
            shape = (1,) * (x.dim() - 1) + (c,)
        mean = torch.from_numpy(self.mean).to(x.device).view(shape)
        std = torch.from_numpy(self.std).to(x.device).view(shape)
        work = torch.float32 if dt in (torch.float16, torch.bfloat16) and x.device.type == "cpu" else dt
        return ((x.to(work) - mean.to(work)) / std.to(work)).to(dt)


class ReplaceLabel(Transform):
    """Sets the label of the samples in indices to new_label."""

    def __init__(self, indices, new_label):
        super().__init__()
        self.indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        self.new_label = int(new_label)

    def _go_spec(self, state):
        if state.jit_mode and tuple(state.shape or ()) == (1,) and np.dtype(state.dtype) == np.int64:
            return {"op": "replace_label", "indices": self.indices.tolist(), "label": self.new_label}
        return None

    def _apply(self, x, ctx):
        m = torch.from_numpy(np.isin(ctx.indices.numpy(), self.indices)).to(x.device)
        return torch.where(m.view(-1, *([1] * (x.dim() - 1))), torch.full_like(x, self.new_label), x)


class Poison(Transform):
    """Blends the images of the samples in indices with mask:
    clip((1 - alpha) * x + alpha * mask, *clamp)."""

    def __init__(self, mask, alpha, indices, clamp=(0, 255)):
        super().__init__()
        self.mask = np.asarray(mask, dtype=np.float32)
        # alpha: FFCV's H×W array (one weight per pixel), or one number.
        a = np.asarray(alpha, dtype=np.float32)
        if a.ndim not in (0, 2):
            raise ValueError(f"Poison: alpha must be an H×W array or a number, got shape {a.shape}")
        if a.ndim == 2 and (self.mask.ndim != 3 or a.shape != self.mask.shape[:2]):
            raise ValueError(f"Poison: alpha of shape {a.shape} does not match the mask's {self.mask.shape}")
        self.alpha = float(a) if a.ndim == 0 else a
        self.indices = np.asarray(indices, dtype=np.int64).reshape(-1)
        self.clamp = (float(clamp[0]), float(clamp[1]))

    def _go_spec(self, state):
        if not _is_cpu_image(state) or tuple(self.mask.shape) != tuple(state.shape):
            return None
        spec = {"op": "poison", "mask": self.mask.reshape(-1).tolist(), "indices": self.indices.tolist(),
                "clamp": list(self.clamp)}
        if isinstance(self.alpha, np.ndarray):
            spec["alpha_map"] = self.alpha.reshape(-1).tolist()
        else:
            spec["alpha"] = self.alpha
        return spec

    def _apply(self, x, ctx):
        m = torch.from_numpy(np.isin(ctx.indices.numpy(), self.indices)).to(x.device)
        mask = torch.from_numpy(self.mask).to(x.device)
        alpha = self.alpha
        if isinstance(alpha, np.ndarray):
            alpha = torch.from_numpy(alpha).to(x.device)[..., None]  # HWC images, as the mask
        mixed = ((1 - alpha) * x.float() + alpha * mask).clamp(*self.clamp).to(x.dtype)
        return torch.where(m.view(-1, 1, 1, 1), mixed, x)


def _mix_lambdas(ctx, alpha, same_lambda, n):
    """lam ~ Beta(alpha, alpha) per sample (or one per batch), as X / (X + Y)
    with X, Y ~ Gamma(alpha) drawn from the batch's generator."""
    g = ctx.generator()
    conc = torch.full((n,), float(alpha))
    gx = torch._standard_gamma(conc, generator=g)
    gy = torch._standard_gamma(conc, generator=g)
    lam = gx / (gx + gy)
    if same_lambda and n:
        lam[:] = lam[0]
    return lam.double()


class ImageMixup(Transform):
    """Mixes image i with image i-1 of the batch: lam*x_i + (1-lam)*x_{i-1},
    lam ~ Beta(alpha, alpha) (one per batch with same_lambda)."""
    _batch = True

    def __init__(self, alpha, same_lambda):
        super().__init__()
        self.alpha, self.same_lambda = float(alpha), bool(same_lambda)

    def _go_spec(self, state):
        if not _is_cpu_image(state):
            return None
        return {"op": "image_mixup", "alpha": self.alpha, "same_lambda": self.same_lambda}

    def _apply(self, x, ctx):
        lam = _mix_lambdas(ctx, self.alpha, self.same_lambda, len(x)).to(x.device)
        shape = (-1,) + (1,) * (x.dim() - 1)
        prev = torch.roll(x, 1, 0)
        out = lam.view(shape) * x.double() + (1 - lam.view(shape)) * prev.double()
        return out.clamp(0, 255).to(x.dtype) if not x.is_floating_point() else out.to(x.dtype)


class LabelMixup(Transform):
    """Turns labels into [y_i, y_{i-1}, lam] (float32) matching ImageMixup."""
    _batch = True

    def __init__(self, alpha, same_lambda):
        super().__init__()
        self.alpha, self.same_lambda = float(alpha), bool(same_lambda)

    def declare_state_and_memory(self, previous_state):
        return replace_state(previous_state, shape=(3,), dtype=np.dtype("<f4")
                             if previous_state.jit_mode else torch.float32), None

    def _go_spec(self, state):
        if state.jit_mode and tuple(state.shape or ()) == (1,) and np.dtype(state.dtype) == np.int64:
            return {"op": "label_mixup", "alpha": self.alpha, "same_lambda": self.same_lambda}
        return None

    def _apply(self, x, ctx):
        y = x.reshape(len(x), -1)[:, 0].float()
        lam = _mix_lambdas(ctx, self.alpha, self.same_lambda, len(x)).float().to(x.device)
        return torch.stack([y, torch.roll(y, 1, 0), lam], dim=1)


class MixupToOneHot(Transform):
    """[y1, y2, lam] -> lam*onehot(y1) + (1-lam)*onehot(y2), (B, num_classes)."""

    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = int(num_classes)

    def declare_state_and_memory(self, previous_state):
        return replace_state(previous_state, shape=(self.num_classes,)), None

    def _apply(self, x, ctx):
        y1, y2, lam = x[:, 0].long(), x[:, 1].long(), x[:, 2:3].float()
        eye = torch.eye(self.num_classes, device=x.device)
        return lam * eye[y1] + (1 - lam) * eye[y2]


class RandomResizedCrop(_RandomImage):
    """Random crop (torchvision's sampling) of decoded images, area-resized to size."""

    def __init__(self, scale, ratio, size):
        super().__init__()
        self.scale, self.ratio = (float(scale[0]), float(scale[1])), (float(ratio[0]), float(ratio[1]))
        self.size = (int(size), int(size)) if np.isscalar(size) else (int(size[0]), int(size[1]))

    def declare_state_and_memory(self, previous_state):
        return replace_state(previous_state, shape=(*self.size, previous_state.shape[2])), None

    def _spec(self):
        return {"op": "rrc", "size": list(self.size), "scale": list(self.scale), "ratio": list(self.ratio)}

    def _apply(self, x, ctx):
        import torchvision.transforms.v2.functional as F
        import math
        x, perm = _hwc(x)
        g = ctx.generator()
        n, h, w, _ = x.shape
        out = []
        for i in range(n):
            top, left, ch, cw = _rrc_params(g, h, w, self.scale, self.ratio)
            crop = x[i, top:top + ch, left:left + cw].permute(2, 0, 1)
            out.append(F.resize(crop, list(self.size), antialias=True).permute(1, 2, 0))
        return _unhwc(torch.stack(out), perm)


def _rrc_params(g, h, w, scale, ratio):
    import math
    area = h * w
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * (scale[0] + float(torch.rand(1, generator=g)) * (scale[1] - scale[0]))
        aspect = math.exp(log_ratio[0] + float(torch.rand(1, generator=g)) * (log_ratio[1] - log_ratio[0]))
        cw, ch = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            top = int(float(torch.rand(1, generator=g)) * (h - ch + 1))
            left = int(float(torch.rand(1, generator=g)) * (w - cw + 1))
            return top, left, ch, cw
    in_ratio = w / h
    cw, ch = w, h
    if in_ratio < ratio[0]:
        ch = int(round(w / ratio[0]))
    elif in_ratio > ratio[1]:
        cw = int(round(h * ratio[1]))
    return (h - ch) // 2, (w - cw) // 2, ch, cw
