"""OrderOption.BUCKETED: batches by total duration (core/order/bucket.go),
of variable size in fixed slots, resumed exactly and elastically, split
over ranks."""
import json

import numpy as np
import pytest
import torch

from conftest import write

from ffcv_go import Loader
from ffcv_go.fields import BytesField, IntField
from ffcv_go.loader import OrderOption
from ffcv_go.utils import attention_mask

N = 60
MAX_DURATION = 40


def frames(i):
    """Sample i's duration: 1 to 15, short ones more common."""
    return 1 + (i * i * 7 + i * 3) % 20 * (i % 3 + 1) // 3


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """id, frames, and wave: frames(i) bytes of value i % 250 + 1."""
    data = [(i, frames(i), np.full(frames(i), i % 250 + 1, dtype=np.uint8)) for i in range(N)]
    return write(tmp_path_factory.mktemp("bucketed") / "clips.beton",
                 {"id": IntField(), "frames": IntField(), "wave": BytesField()}, data)


def make(path, monkeypatch=None, rank=0, world=1, **kw):
    if monkeypatch is not None:
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", str(world))
    kw.setdefault("order_kwargs", {"duration_field": "frames", "max_duration": MAX_DURATION, "num_buckets": 4})
    kw.setdefault("drop_last", False)
    return Loader(path, batch_size=8, num_workers=1, order=OrderOption.BUCKETED, seed=3, distributed=world > 1,
                  **kw)


def epoch(loader):
    return [(b[0].reshape(-1).tolist(), b[1].reshape(-1).clone(), b[2].clone()) for b in loader]


def test_variable_batches_padded_with_lengths(clips):
    loader = make(clips)
    for _ in range(2):
        want = len(loader)
        got = epoch(loader)
        assert len(got) == want
        sizes = {len(ids) for ids, _, _ in got}
        assert len(sizes) > 1 and max(sizes) <= 8, sizes
        assert sorted(i for ids, _, _ in got for i in ids) == list(range(N))
        for ids, lengths, wave in got:
            assert lengths.tolist() == [frames(i) for i in ids]
            assert int(lengths.sum()) <= MAX_DURATION
            # The wave is padded to the file's longest; the mask of the lengths
            # marks what is the sample's.
            mask = attention_mask(lengths, wave.shape[1])
            assert torch.equal(wave != 0, mask)
            assert attention_mask(lengths).shape == (len(ids), int(lengths.max()))
    assert len(loader) == len(epoch(loader))  # the next epoch's, another count maybe


def test_resume_mid_epoch(clips):
    whole = epoch(make(clips))
    loader = make(clips)
    it = iter(loader)
    head = [next(it) for _ in range(3)]
    state = json.loads(json.dumps(loader.state_dict()))
    del it, head
    again = make(clips)
    again.load_state_dict(state)
    rest = epoch(again)
    assert [ids for ids, _, _ in rest] == [ids for ids, _, _ in whole[3:]]


def test_two_ranks(clips, monkeypatch):
    """2 ranks: the same number of batches, totals within max_duration of
    each other, every sample taken (the last step filled up from the head)."""
    per_rank, totals = [], []
    for r in range(2):
        got = epoch(make(clips, monkeypatch, r, 2))
        per_rank.append([i for ids, _, _ in got for i in ids])
        totals.append(sum(frames(i) for i in per_rank[-1]))
        assert len(got) == len(make(clips, monkeypatch, r, 2))
    assert set(per_rank[0]) | set(per_rank[1]) == set(range(N))
    assert abs(totals[0] - totals[1]) <= MAX_DURATION


@pytest.mark.parametrize("world, drop_last", [(1, True), (3, False)])
def test_elastic_resume(clips, monkeypatch, world, drop_last):
    """A state saved by 2 ranks after 2 batches resumes at another world
    size: every sample not yet taken exactly once over the new ranks."""
    taken, states = [], []
    for r in range(2):
        loader = make(clips, monkeypatch, r, 2, drop_last=drop_last)
        it = iter(loader)
        taken += [i for _ in range(2) for i in next(it)[0].reshape(-1).tolist()]
        states.append(json.loads(json.dumps(loader.state_dict())))
        del it
    assert states[0] == states[1]
    rest = []
    for r in range(world):
        loader = make(clips, monkeypatch, r, world, drop_last=drop_last)
        loader.load_state_dict(states[0])
        it = iter(loader)
        want = len(it)  # the rest of the epoch (len(loader): a whole one)
        got = epoch(it)
        assert len(got) == want > 0
        rest += [i for ids, _, _ in got for i in ids]
    assert len(set(taken)) == len(taken) and len(set(rest)) == len(rest)
    assert sorted(taken + rest) == list(range(N))


@pytest.mark.parametrize("kwargs, message", [
    ({"max_duration": 40}, "needs order_kwargs['duration_field']"),
    ({"duration_field": "frames"}, "order_kwargs['max_duration'] None must be a positive number"),
    ({"duration_field": "frames", "max_duration": 0}, "must be a positive number"),
    ({"duration_field": "frames", "max_duration": 40, "num_buckets": 0}, "num_buckets'] 0 must be a positive"),
    ({"duration_field": "frames", "max_duration": 40, "buckets": 3}, "unknown order_kwargs ['buckets']"),
    ({"duration_field": "length", "max_duration": 40}, 'duration field "length" is not a field'),
    ({"duration_field": "wave", "max_duration": 40}, "is a BytesField: durations are read from an IntField"),
    ({"duration_field": "frames", "max_duration": 12}, "has duration 15, more than max_duration 12"),
])
def test_bad_arguments(clips, kwargs, message):
    with pytest.raises(ValueError) as e:
        make(clips, order_kwargs=kwargs)
    assert message in str(e.value)


def test_mixture_refused(clips):
    from ffcv_go.loader import Mixture, Source
    with pytest.raises(ValueError, match="BUCKETED batches one dataset's samples by duration"):
        Loader(Mixture([Source(clips, repeat=1, name="a"), Source(clips, repeat=1, name="b")]), batch_size=8,
               order=OrderOption.BUCKETED, order_kwargs={"duration_field": "frames", "max_duration": 40})


def test_state_of_another_order_refused(clips):
    random = Loader(clips, batch_size=8, num_workers=1, order=OrderOption.RANDOM, seed=3)
    it = iter(random)
    next(it)
    state = random.state_dict()
    with pytest.raises(ValueError, match="saved mid-epoch with order random, this loader's is bucketed"):
        make(clips).load_state_dict(state)
