"""Measuring the model: alone, on random inputs already on the device, and
together with the loader, as training sees it: the loader feeding the model
for a bounded time while the training loop's waits in ``next()`` and the
device's busy time are counted.

A training step is forward, a loss fitting whatever the model returns,
backward and an SGD step. Classifiers' logits get cross-entropy with the
batch's labels (random ones when the batch has none that fit);
segmentation outputs (``{"out": (N, C, H, W)}``) get cross-entropy with
random label maps; torchvision's detection models train on the batch's
boxes and labels where the pipeline decodes them (``RaggedDecoder``
outputs), otherwise on one made-up box per image, and return their losses;
``targets`` in the model's entries says which."""
import inspect
import sys
import time


def resolve_model(model):
    """(module, name) of diagnose's model argument: a torchvision model
    name (built without weights, nothing downloaded), a .py file defining
    ``model``, an ``nn.Module`` or a function returning one."""
    import torch
    if isinstance(model, torch.nn.Module):
        return model, type(model).__name__
    if isinstance(model, str):
        if model.endswith(".py"):
            import runpy
            ns = runpy.run_path(model)
            obj = ns.get("model")
            if obj is None:
                raise ValueError(f"{model} defines no `model` (an nn.Module or a function returning one)")
            m = obj() if callable(obj) and not isinstance(obj, torch.nn.Module) else obj
            if not isinstance(m, torch.nn.Module):
                raise ValueError(f"{model}: `model` is a {type(m).__name__}, not an nn.Module")
            return m, model
        try:
            import torchvision
        except ImportError as e:
            raise ValueError(f"model {model!r}: torchvision is needed for named models") from e
        try:
            builder = torchvision.models.get_model_builder(model)
        except ValueError as e:
            raise ValueError(f"model {model!r}: not a torchvision model name nor a .py file ({e})") from e
        kwargs = {"weights": None}
        if "weights_backbone" in inspect.signature(builder).parameters:
            kwargs["weights_backbone"] = None  # detection and segmentation backbones: no download either
        return builder(**kwargs), model
    if callable(model):
        m = model()
        if not isinstance(m, torch.nn.Module):
            raise ValueError(f"model(): returned a {type(m).__name__}, not an nn.Module")
        return m, getattr(model, "__name__", "model")
    raise ValueError(f"model {model!r}: a torchvision name, a .py file, an nn.Module or a function")


def _is_detection(m):
    """torchvision's detection models (R-CNNs, RetinaNet, FCOS, SSD): they
    take a list of images and their targets, and return their losses. (One
    was built only if torchvision's detection package is loaded: importing
    it otherwise would cost seconds.)"""
    mod = sys.modules.get("torchvision.models.detection.transform")
    return mod is not None and isinstance(getattr(m, "transform", None), mod.GeneralizedRCNNTransform)


class TrainStep:
    """Training steps of module m: ``step(*step.inputs(batch))`` on what a
    loader yields (its first (N, C, H, W) tensor is the input, an integer
    (N,) tensor the labels), or ``step(x)`` on an input tensor."""

    def __init__(self, m, name, device, amp):
        import torch
        self.name, self.amp = name, bool(amp)
        self.dev = torch.device(device)
        self.m = m.to(self.dev).train()
        if self.dev.type == "cuda":
            self.m = self.m.to(memory_format=torch.channels_last)
        params = [p for p in self.m.parameters() if p.requires_grad]
        self.opt = torch.optim.SGD(params, lr=1e-3) if params else None
        self.amp_dtype = torch.float16 if self.dev.type == "cuda" else torch.bfloat16
        self.detection = _is_detection(self.m)
        self.kind = "detection" if self.detection else None  # else set by the first output
        # What a detection model trained on: the dataset's boxes or the doctor's own.
        self.targets = None
        self._targets = {}

    def sync(self):
        import torch
        if self.dev.type == "cuda":
            torch.cuda.synchronize(self.dev)

    def inputs(self, batch):
        """(images (N, C, H, W) float on the device, labels or None) of a
        loader batch; for a detection model whose batch has boxes (a
        ``Ragged`` of (x0, y0, x1, y1) rows), the labels are torchvision's
        target dicts of those boxes."""
        import torch
        from ..fields.ragged import Ragged
        items = batch if isinstance(batch, (tuple, list)) and not isinstance(batch, Ragged) else (batch,)
        tensors = [t for t in items if torch.is_tensor(t)]
        x = next((t for t in tensors if t.ndim == 4), None)
        if x is None:
            shapes = [tuple(t.shape) for t in tensors]
            raise ValueError(f"the loader's batches have no image tensor (N, C, H, W) to feed the model "
                             f"(tensors of shapes {shapes})")
        if x.shape[1] not in (1, 3) and x.shape[-1] in (1, 3):  # (N, H, W, C): no ToTorchImage
            x = x.permute(0, 3, 1, 2)
        x = x.to(self.dev, non_blocking=True)
        if not x.is_floating_point():
            x = x.float() / 255
        elif x.dtype != torch.float32 and not self.amp:
            x = x.float()
        labels = next((t for t in tensors if t is not x and not t.is_floating_point() and t.ndim in (1, 2)
                       and t.shape[0] == x.shape[0] and t.numel() == x.shape[0]), None)
        if labels is not None:
            labels = labels.reshape(-1).to(self.dev, non_blocking=True).long()
        if self.detection:
            targets = self._dataset_targets([t for t in items if isinstance(t, Ragged)], x)
            if targets is not None:
                return x, targets
        return x, labels

    def _dataset_targets(self, ragged, x):
        """torchvision's targets of the batch's boxes: the first Ragged of
        float (x0, y0, x1, y1) rows, its labels the first integer Ragged of
        as many rows (class 1 without one), clamped to the model's classes
        (only the cost is measured); masks (each box filled) and keypoints
        (its centre) where the model's heads want them. None without boxes."""
        import torch
        from ..detection import to_torchvision_targets
        data = [(torch.as_tensor(r.data), torch.as_tensor(r.counts)) for r in ragged]
        boxes = next(((d, c) for d, c in data if d.ndim == 3 and d.shape[-1] == 4 and d.is_floating_point()), None)
        if boxes is None:
            return None
        b, counts = boxes
        lab = next((d for d, c in data if not d.is_floating_point() and d.shape[:2] == b.shape[:2]
                    and d[0, :1].numel() <= 1 and torch.equal(c, counts)), None)
        has_labels = lab is not None
        if lab is None:
            lab = torch.ones(b.shape[:2], dtype=torch.int64)
        classes = self._num_classes()
        lab = lab.reshape(b.shape[:2]).long()
        lab = lab.clamp(1, classes - 1) if classes and classes > 1 else lab.clamp(min=1)
        b = b.to(self.dev, non_blocking=True).float()
        targets = to_torchvision_targets(b, lab.to(self.dev, non_blocking=True), counts=counts)
        n, _, h, w = x.shape
        heads = getattr(self.m, "roi_heads", None)
        extra = []
        for t in targets:
            if heads is not None and heads.has_mask():
                m = torch.zeros(len(t["boxes"]), h, w, dtype=torch.uint8, device=self.dev)
                for k, (x0, y0, x1, y1) in enumerate(t["boxes"].round().long().tolist()):
                    m[k, max(0, y0):max(y0 + 1, y1), max(0, x0):max(x0 + 1, x1)] = 1
                t["masks"] = m
                extra.append("masks")
            if heads is not None and heads.has_keypoint():
                k = heads.keypoint_predictor.kps_score_lowres.out_channels
                ctr = (t["boxes"][:, :2] + t["boxes"][:, 2:]) / 2
                t["keypoints"] = torch.cat([ctr, torch.ones(len(ctr), 1, device=self.dev)], 1)[:, None].repeat(1, k, 1)
                extra.append("keypoints")
        self.targets = ("the dataset's boxes" + (" and labels" if has_labels else ", class 1")
                        + (f" ({' and '.join(dict.fromkeys(extra))} made from each box)" if extra else ""))
        return targets

    def _num_classes(self):
        """The classes of a torchvision detection model's head, where it says."""
        heads = getattr(self.m, "roi_heads", None)
        pred = getattr(getattr(heads, "box_predictor", None), "cls_score", None)
        if pred is not None:
            return pred.out_features
        head = getattr(getattr(self.m, "head", None), "classification_head", None)
        return getattr(head, "num_classes", None)

    def __call__(self, x, labels=None):
        """Forward, loss, backward and an SGD step (asynchronous on a GPU)."""
        import torch
        if self.dev.type == "cuda" and x.ndim == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type=self.dev.type, dtype=self.amp_dtype, enabled=self.amp):
            if self.detection:
                out = self.m(list(x), labels if isinstance(labels, list) else self._detection_targets(x))
            else:
                out = self.m(x)
        loss = self._loss(out, labels)
        if self.opt is not None and loss.requires_grad:
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
        return loss

    def _detection_targets(self, x):
        """One box (the image's centre half) of class 1 per image; a mask
        and keypoints where the model's heads predict them: for the model
        alone, and for batches without boxes."""
        import torch
        if self.targets is None:
            self.targets = "made-up: one box per image (its centre half); the pipeline decodes no boxes"
        n, _, h, w = x.shape
        key = ("det", n, h, w)
        if key not in self._targets:
            box = torch.tensor([[w / 4, h / 4, 3 * w / 4, 3 * h / 4]], device=self.dev)
            t = {"boxes": box, "labels": torch.ones(1, dtype=torch.int64, device=self.dev)}
            heads = getattr(self.m, "roi_heads", None)
            if heads is not None and heads.has_mask():
                mask = torch.zeros(1, h, w, dtype=torch.uint8, device=self.dev)
                mask[:, h // 4:3 * h // 4, w // 4:3 * w // 4] = 1
                t["masks"] = mask
            if heads is not None and heads.has_keypoint():
                k = heads.keypoint_predictor.kps_score_lowres.out_channels
                t["keypoints"] = torch.tensor([[[w / 2, h / 2, 1.0]] * k], device=self.dev)
            self._targets[key] = [t] * n
        return self._targets[key]

    def _loss(self, out, labels):
        """A scalar loss of any output: the sum of a detection model's
        losses; cross-entropy of logits (N, C) and of segmentation maps
        (N, C, H, W); the mean of anything else."""
        import torch
        if isinstance(out, dict):
            parts = [v for v in out.values() if torch.is_tensor(v)]
        elif isinstance(out, (tuple, list)):
            parts = [v for v in out if torch.is_tensor(v)][:1]  # (logits, aux...): the logits
        elif torch.is_tensor(out):
            parts = [out]
        else:
            parts = [getattr(out, "loss", None) if torch.is_tensor(getattr(out, "loss", None)) else
                     getattr(out, "logits", None)]
            parts = [p for p in parts if torch.is_tensor(p)]
        if not parts:
            raise ValueError(f"cannot make a loss of the model's output ({type(out).__name__}): give a model "
                             "returning a tensor, a dict of tensors or torchvision's detection losses")
        loss = 0
        for t in parts:
            t = t.float()
            if t.ndim == 0:
                loss = loss + t
            elif t.ndim == 2:
                loss = loss + torch.nn.functional.cross_entropy(t, self._labels(labels, t))
                self.kind = self.kind or "classification"
            elif t.ndim == 4:
                loss = loss + torch.nn.functional.cross_entropy(t, self._label_map(t))
                self.kind = self.kind or "segmentation"
            else:
                loss = loss + t.mean()
                self.kind = self.kind or "other"
        return loss

    def _labels(self, labels, logits):
        """The batch's labels, clamped to the model's classes (checking them
        would make a GPU wait every step; only the cost is measured), or
        random ones."""
        import torch
        n, c = logits.shape
        if labels is not None and len(labels) == n:
            return labels.clamp(0, c - 1)
        key = ("cls", n, c)
        if key not in self._targets:
            self._targets[key] = torch.randint(0, c, (n,), device=logits.device)
        return self._targets[key]

    def _label_map(self, t):
        import torch
        n, c, h, w = t.shape
        key = ("seg", n, c, h, w)
        if key not in self._targets:
            self._targets[key] = torch.randint(0, c, (n, h, w), device=t.device)
        return self._targets[key]


def measure_alone(step, batch_size, size, seconds):
    """Training steps per second on random inputs already on the device,
    so the rate is the model's alone."""
    import torch
    x = torch.randn(batch_size, 3, *size, device=step.dev)
    t = time.perf_counter()
    step(x)  # warm-up: allocation, cuDNN's choice of algorithms
    step.sync()
    warm = time.perf_counter() - t
    if warm >= seconds:
        steps, dt = 1, warm  # a slow model: the warm-up step is the estimate (pessimistic)
    else:
        steps, t0 = 0, time.perf_counter()
        while True:
            step(x)
            steps += 1
            step.sync()
            dt = time.perf_counter() - t0
            if dt >= seconds - warm:
                break
    return {"name": step.name, "device": str(step.dev), "amp": step.amp, "batch_size": batch_size,
            "input": [3, *size], "kind": step.kind, "steps": steps, "seconds": dt, "steps_s": steps / dt,
            "img_s": steps * batch_size / dt, "warmup_s": warm, "from_warmup": steps == 1 and dt == warm}


def measure_together(data, make, step, *, workers, batch_size, order, os_cache, indices, seconds,
                     loader_kwargs=None, cut_at=None):
    """The loader feeding the model for about `seconds`, as a training loop
    does. After warm-up steps (the first batch, and the batches the loader
    made ahead meanwhile, which come at once), it counts the time the loop
    waited in ``next()`` (the loader's own ``wait_seconds``), the time in
    the training steps, and the time the device was busy (CUDA events
    around each step on a GPU; the steps' time on the CPU). cut_at (a
    time.perf_counter() value): the loader's epoch is closed then, a wait
    for a batch included; cut before two timed steps, it raises
    TimeoutError."""
    import torch
    from ..loader import Loader, OrderOption
    from ._measure import Cut, close_loader
    loader = Loader(data, batch_size=batch_size, num_workers=workers, order=OrderOption[order.upper()],
                    os_cache=os_cache, indices=indices, drop_last=False, seed=1, pipelines=make(),
                    **(loader_kwargs or {}))
    cuda = step.dev.type == "cuda"
    ahead = loader.batches_ahead + 1
    step.targets = None  # set by the batches' boxes, or the lack of them
    window, events = None, []
    warm = images = steps = 0
    step_s = 0.0
    t_begin = time.perf_counter()
    cut = None
    try:
        it = iter(loader)
        cut = Cut(it, cut_at)
        empty = 0
        while True:
            try:
                batch = next(it)
                empty = 0
            except StopIteration:
                if cut.fired:  # closed at the deadline between two batches
                    if window is None or steps < 2:
                        raise TimeoutError(f"the loader fed the model {warm + steps} batch(es) in "
                                           f"{time.perf_counter() - t_begin:.1f} s, before the time was up") from None
                    break
                empty += 1
                if empty > 1:
                    raise RuntimeError("the loader's epochs are empty") from None
                cut.cancel()
                it = iter(loader)  # the next epoch
                cut = Cut(it, cut_at)
                continue
            except RuntimeError:
                if not cut.fired:
                    raise
                if window is None or steps < 2:
                    raise TimeoutError(f"the loader fed the model {warm + steps} batch(es) in "
                                       f"{time.perf_counter() - t_begin:.1f} s, before the time was up") from None
                break  # cut at the deadline, waiting for a batch
            # The window opens after the warm-up steps, or a quarter of the
            # time, whichever first; this batch's wait came before it.
            if window is None and warm >= 1 and (warm >= ahead or time.perf_counter() - t_begin >= seconds / 4):
                step.sync()
                st = loader.stats
                window = {"t": time.perf_counter(), "cpu": time.process_time(), "wait": st["wait_seconds"],
                          "waits": st["waits"]}
            timed = window is not None
            t0 = time.perf_counter()
            if cuda and timed:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
            x, labels = step.inputs(batch)
            step(x, labels)
            del batch
            after = time.perf_counter()
            if not timed:
                warm += 1
                continue
            if cuda:
                end.record()
                events.append((start, end))
            step_s += time.perf_counter() - t0
            steps += 1
            images += len(x)
            if time.perf_counter() - window["t"] >= seconds and steps >= 2:
                break
        cut.cancel()
        step.sync()
        t_end, c_end = time.perf_counter(), time.process_time()
        st = loader.stats
        if cut.fired:
            # The wait the cut ended brought no batch: it counts as waited all the same.
            st = dict(st, wait_seconds=st["wait_seconds"] + max(0.0, t_end - after))
    finally:
        if cut is not None:
            cut.cancel()
        close_loader(loader, cut)
    wall = t_end - window["t"]
    wait = st["wait_seconds"] - window["wait"]
    busy = sum(s.elapsed_time(e) for s, e in events) / 1000 if cuda else step_s
    return {"name": step.name, "device": str(step.dev), "amp": step.amp, "kind": step.kind,
            "batch_size": batch_size, "workers": workers, "steps": steps, "images": images, "seconds": wall,
            "img_s": images / wall, "wait_s": wait, "waits": st["waits"] - window["waits"],
            "wait_share": min(1.0, wait / wall), "step_s": step_s, "device_busy_share": min(1.0, busy / wall),
            "device_busy_from": "CUDA events" if cuda else "the training steps' time",
            "cores_busy": (c_end - window["cpu"]) / wall, "warmup_steps": warm, "warmup_s": window["t"] - t_begin,
            "torch_threads": None if cuda else torch.get_num_threads(), "cut": cut.fired,
            "targets": step.targets}


def failure(name, e, batch_size, device):
    """The model entry of a report whose model could not train: the error,
    and what to do about an out-of-memory one."""
    import torch
    oom = isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower()
    msg = " ".join(str(e).split())
    if len(msg) > 300:
        msg = msg[:300] + " ..."
    out = {"name": name, "device": str(device), "error": f"{type(e).__name__}: {msg}", "out_of_memory": oom}
    if oom:
        out["advice"] = (f"the model ran out of memory on {device} at batch size {batch_size}: try "
                         f"--batch-size {max(1, batch_size // 2)}, or --amp")
    return out


def free_device(device):
    """Gives a failed model's cached GPU memory back."""
    import gc

    import torch
    gc.collect()
    if str(device).startswith("cuda") and torch.cuda.is_available():
        torch.cuda.empty_cache()

