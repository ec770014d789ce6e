"""YOLO's CutMix after Mosaic and RandomPerspective, on the painted scenes
of test_mosaic: the sample's own image and rows stay those without it
outside the cut area, the partner's rows lie inside the area and enclose
their objects' pixels there, and the batches do not depend on the number
of workers."""
import numpy as np
import pytest
import torch

from test_mosaic import MIN_AREA, MIN_SIZE, ROWS, S, _local_problems, scene_file, scenes  # noqa: F401

from ffcv_go import Loader
from ffcv_go.fields.decoders import LabelMosaic, MosaicRGBImageDecoder, RaggedDecoder
from ffcv_go.pipeline import PipelineSpec
from ffcv_go.transforms import CutMix, LabelCutMix, RandomPerspective


def _loader(path, cut, workers=2):
    image = [MosaicRGBImageDecoder(imgsz=S, seed=7), RandomPerspective(border=-(S // 2), seed=5)]
    params = [LabelMosaic(imgsz=S, seed=7)]
    if cut:
        image.append(CutMix(p=0.9, num_areas=6, seed=11))
        params.append(LabelCutMix(p=0.9, num_areas=6, seed=11))
    return Loader(path, batch_size=10, num_workers=workers, seed=3, pipelines={
        "image": image, "boxes": [RaggedDecoder(max_rows=2 * ROWS, min_size=MIN_SIZE, min_area=MIN_AREA)],
        "labels": [RaggedDecoder(max_rows=2 * ROWS)], "mask": None,
        "params": PipelineSpec("image", decoder=params[0], transforms=params[1:])})


def _masked(img, keep):
    """img with the pixels outside keep painted background."""
    out = img.copy()
    out[~keep] = scenes.BG_LO
    return out


def test_cutmix_pastes_a_partner_area_and_its_boxes(scene_file):  # noqa: F811
    applied, partner_rows, problems = 0, 0, []
    for (ia, ba, la, _), (ib, bb, lb, pb) in zip(_loader(scene_file, False), _loader(scene_file, True)):
        for i in range(len(ia)):
            na, nb = int(ba.counts[i]), int(bb.counts[i])
            on, x1, y1, x2, y2 = (int(v) for v in (pb[i, 6], pb[i, 8], pb[i, 9], pb[i, 10], pb[i, 11]))
            assert torch.equal(bb.data[i, :na], ba.data[i, :na]) and torch.equal(lb.data[i, :na], la.data[i, :na])
            if not on:
                assert nb == na and torch.equal(ia[i], ib[i])
                continue
            applied += 1
            partner_rows += nb - na
            area = np.zeros((S, S), bool)
            area[y1:y2, x1:x2] = True
            own, cut = ia[i].numpy(), ib[i].numpy()
            assert np.array_equal(cut[~area], own[~area]) and not np.array_equal(cut, own)
            own_boxes, boxes = ba.data[i, :na].numpy(), bb.data[i, na:nb].numpy()
            # The area overlaps none of the sample's own boxes.
            ix = np.minimum(own_boxes[:, 2], x2) - np.maximum(own_boxes[:, 0], x1)
            iy = np.minimum(own_boxes[:, 3], y2) - np.maximum(own_boxes[:, 1], y1)
            assert not ((ix > 0) & (iy > 0)).any(), (own_boxes, (x1, y1, x2, y2))
            assert (boxes[:, :2] >= [x1, y1]).all() and (boxes[:, 2:] <= [x2, y2]).all(), (boxes, (x1, y1, x2, y2))
            # Rows are clipped to the area after the box filter, as Ultralytics
            # clips them: slivers along its edge show no whole pixel to check.
            wide = ((boxes[:, 2:] - boxes[:, :2]) >= 2).all(1)
            problems += _local_problems(_masked(cut, area), boxes[wide], lb.data[i, na:nb].numpy()[wide])
            problems += _local_problems(_masked(cut, ~area), own_boxes, la.data[i, :na].numpy())
    assert not problems, "\n".join(problems[:10])
    assert 0 < applied and partner_rows > 0


def test_same_batches_for_any_worker_count(scene_file):  # noqa: F811
    for a, b in zip(_loader(scene_file, True, workers=1), _loader(scene_file, True, workers=2)):
        for x, y in zip(a, b):
            x, y = (x.data, y.data) if hasattr(x, "counts") else (x, y)
            assert torch.equal(x, y)


def test_label_cutmix_needs_its_cutmix(scene_file):  # noqa: F811
    with pytest.raises(ValueError, match="LabelCutMix"):
        Loader(scene_file, batch_size=4, pipelines={
            "image": [MosaicRGBImageDecoder(imgsz=S, seed=7)], "boxes": None, "labels": None, "mask": None,
            "params": PipelineSpec("image", decoder=LabelMosaic(imgsz=S, seed=7),
                                   transforms=[LabelCutMix(0.5, seed=4)])})
