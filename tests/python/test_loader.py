"""Loader semantics (FFCV 1.0's): lengths, batches, indices, pipelines, outputs, filter, transforms."""
import numpy as np
import pytest
import torch

from conftest import N_INDEX, collect, ids, index_sample

from ffcv_go import Loader
from ffcv_go.loader import OrderOption
from ffcv_go.pipeline import PipelineSpec
from ffcv_go.fields.decoders import IntDecoder, FloatDecoder, NDArrayDecoder
from ffcv_go.transforms import Squeeze, Convert, View, ToTensor


def vecs(index):
    return np.stack([index_sample(int(i))[2] for i in index])


@pytest.mark.parametrize("bs", [1, 10, 103, 200])
@pytest.mark.parametrize("drop_last", [True, False])
def test_len_and_batch_sizes(index_file, bs, drop_last):
    loader = Loader(index_file, batch_size=bs, num_workers=2, drop_last=drop_last)
    want = N_INDEX // bs if drop_last else -(-N_INDEX // bs)
    assert len(loader) == want
    batches = collect(loader)
    assert len(batches) == want
    sizes = [len(b[0]) for b in batches]
    assert all(s == bs for s in sizes[:N_INDEX // bs])
    if not drop_last and N_INDEX % bs:
        assert sizes[-1] == N_INDEX % bs
    assert np.array_equal(ids(batches), np.arange(sum(sizes)))


def test_default_outputs_and_partial_batch(index_file):
    batches = list(Loader(index_file, batch_size=25, num_workers=2, drop_last=False))
    assert len(batches) == 5
    index, value, vec = batches[-1]
    assert index.shape == (3, 1) and index.dtype == torch.int64
    assert value.shape == (3, 1) and value.dtype == torch.float64
    assert vec.shape == (3, 3) and vec.dtype == torch.int32
    assert index[:, 0].tolist() == [100, 101, 102]
    assert value[:, 0].tolist() == [i * 0.5 - 3.0 for i in (100, 101, 102)]
    assert np.array_equal(vec.numpy(), vecs([100, 101, 102]))


def test_indices_subset_sequential_keeps_given_order(index_file):
    sel = [50, 3, 99, 0, 42, 7, 102, 1, 64]
    for workers in (1, 2):
        loader = Loader(index_file, batch_size=4, num_workers=workers, indices=sel, drop_last=False)
        assert len(loader) == 3
        batches = collect(loader)
        assert ids(batches).tolist() == sel
        assert np.array_equal(np.concatenate([b[2] for b in batches]), vecs(sel))
    loader = Loader(index_file, batch_size=4, num_workers=2, indices=np.array(sel), drop_last=True)
    assert len(loader) == 2 and ids(collect(loader)).tolist() == sel[:8]


def test_indices_with_repeats(index_file):
    sel = [5, 5, 5, 1, 5]
    batches = collect(Loader(index_file, batch_size=2, num_workers=2, indices=sel, drop_last=False))
    assert ids(batches).tolist() == sel


def test_pipeline_none_drops_field(index_file):
    loader = Loader(index_file, batch_size=8, num_workers=1, pipelines={"value": None})
    index, vec = next(iter(loader))
    assert index.shape == (8, 1) and vec.shape == (8, 3)
    loader = Loader(index_file, batch_size=8, num_workers=1, pipelines={"index": None, "vec": None})
    (value,) = next(iter(loader))
    assert value.dtype == torch.float64 and value[:, 0].tolist() == [i * 0.5 - 3 for i in range(8)]


def test_output_order_is_file_order(index_file):
    pipelines = {"vec": [NDArrayDecoder(), ToTensor()], "index": [IntDecoder(), ToTensor(), Squeeze(1)]}
    index, value, vec = next(iter(Loader(index_file, batch_size=6, num_workers=2, pipelines=pipelines)))
    assert index.shape == (6,) and index.tolist() == list(range(6))
    assert value.shape == (6, 1) and value.dtype == torch.float64
    assert vec.dtype == torch.int32 and np.array_equal(vec.numpy(), vecs(range(6)))


def test_pipeline_spec_extra_outputs(index_file):
    pipelines = {
        "extra_b": PipelineSpec("index", transforms=[Squeeze(), ToTensor(), Convert(torch.float32)]),
        "vec": [NDArrayDecoder(), ToTensor()],
        "extra_a": PipelineSpec(source="vec", decoder=NDArrayDecoder(), transforms=[View(np.float32)]),
        "value": None,
    }
    loader = Loader(index_file, batch_size=6, num_workers=2, pipelines=pipelines)
    out = next(iter(loader))
    assert len(out) == 4
    index, vec, extra_b, extra_a = out
    assert index.shape == (6, 1) and index[:, 0].tolist() == list(range(6))
    assert vec.dtype == torch.int32 and np.array_equal(vec.numpy(), vecs(range(6)))
    assert extra_b.dtype == torch.float32 and extra_b.tolist() == [float(i) for i in range(6)]
    assert extra_a.dtype == torch.float32 and np.array_equal(extra_a.numpy().view(np.int32), vecs(range(6)))


def test_pipeline_spec_unknown_source(index_file):
    with pytest.raises(ValueError, match="'nope'"):
        Loader(index_file, batch_size=4, num_workers=1, pipelines={"x": PipelineSpec("nope")})


def test_pipeline_without_decoder_gets_the_default(index_file):
    loader = Loader(index_file, batch_size=5, num_workers=1,
                    pipelines={"index": [Squeeze()], "value": [Convert(np.float16)], "vec": [Convert(np.int64)]})
    index, value, vec = next(iter(loader))
    assert index.shape == (5,) and index.dtype == torch.int64 and index.tolist() == list(range(5))
    assert value.shape == (5, 1) and value.dtype == torch.float16
    assert value[:, 0].tolist() == [float(np.float16(i * 0.5 - 3)) for i in range(5)]
    assert vec.dtype == torch.int64 and np.array_equal(vec.numpy(), vecs(range(5)))


def test_explicit_decoders(index_file):
    loader = Loader(index_file, batch_size=5, num_workers=1,
                    pipelines={"index": [IntDecoder()], "value": [FloatDecoder(), ToTensor()], "vec": [NDArrayDecoder()]})
    index, value, vec = next(iter(loader))
    for x in (index, value, vec):
        assert isinstance(x, torch.Tensor)
    assert index[:, 0].tolist() == list(range(5)) and value.dtype == torch.float64


def test_squeeze_convert_view(index_file):
    if not hasattr(torch, "uint32"):  # torch < 2.3
        with pytest.raises(ValueError, match=r"torch\.uint32, which torch .* lacks"):
            Loader(index_file, batch_size=7, num_workers=2, pipelines={"vec": [NDArrayDecoder(), View(np.uint32), ToTensor()]})
        pytest.skip(f"torch {torch.__version__} has no uint32 tensors")
    pipelines = {"index": [IntDecoder(), Squeeze(-1), Convert(np.int16)],
                 "value": [FloatDecoder(), View(np.int64)],
                 "vec": [NDArrayDecoder(), View(np.uint32), ToTensor(), Convert(torch.float64)]}
    index, value, vec = next(iter(Loader(index_file, batch_size=7, num_workers=2, pipelines=pipelines)))
    assert index.dtype == torch.int16 and index.shape == (7,) and index.tolist() == list(range(7))
    want_bits = np.array([i * 0.5 - 3 for i in range(7)], dtype=np.float64).view(np.int64)
    assert value.dtype == torch.int64 and value[:, 0].tolist() == want_bits.tolist()
    assert vec.dtype == torch.float64
    assert np.array_equal(vec.numpy(), vecs(range(7)).view(np.uint32).astype(np.float64))


def test_torch_dtype_in_jit_mode_is_an_error(index_file):
    # FFCV: a State in jit mode cannot hold a torch dtype (ToTensor must come first).
    with pytest.raises(AssertionError, match="JIT"):
        Loader(index_file, batch_size=4, num_workers=1, pipelines={"value": [FloatDecoder(), Convert(torch.float32)]})


def test_torch_module_in_pipeline(index_file):
    class Double(torch.nn.Module):
        def forward(self, x):
            return x * 2
    (index,) = next(iter(Loader(index_file, batch_size=4, num_workers=1,
                                pipelines={"value": None, "vec": None, "index": [IntDecoder(), Double()]})))
    assert index[:, 0].tolist() == [0, 2, 4, 6]


def test_filter(index_file):
    loader = Loader(index_file, batch_size=8, num_workers=2, drop_last=False)
    kept = loader.filter("index", lambda v: int(v[0]) % 3 == 0)
    want = [i for i in range(N_INDEX) if i % 3 == 0]
    assert len(kept) == -(-len(want) // 8)
    batches = collect(kept)
    assert ids(batches).tolist() == want
    assert len(batches[0]) == 3  # every field again
    assert np.array_equal(np.concatenate([b[2] for b in batches]), vecs(want))


def test_filter_uses_field_pipeline_and_keeps_order_and_indices(index_file):
    sel = list(range(N_INDEX - 1, -1, -2))  # 102, 100, ..., 0
    loader = Loader(index_file, batch_size=5, num_workers=2, indices=sel, drop_last=True, order=OrderOption.RANDOM,
                    seed=4, pipelines={"value": [Squeeze()]})
    kept = loader.filter("value", lambda v: float(v) > 10.0)  # value = i/2 - 3 > 10 <=> i > 26
    want = [i for i in sel if i > 26]
    assert len(kept) == len(want) // 5
    got = ids(collect(kept))
    assert len(got) == len(want) // 5 * 5
    # RANDOM order of the filtered loader: default_rng(seed).permutation(kept indices), cut to whole batches.
    assert got.tolist() == np.random.default_rng(4).permutation(np.array(want)).tolist()[:len(got)]


def test_each_iter_is_next_epoch(index_file):
    loader = Loader(index_file, batch_size=10, num_workers=2, order=OrderOption.RANDOM, seed=11, drop_last=False)
    epochs = [ids(collect(loader)) for _ in range(3)]
    for e, got in enumerate(epochs):
        assert got.tolist() == np.random.default_rng(11 + e).permutation(N_INDEX).tolist()
    assert not np.array_equal(epochs[0], epochs[1])


def test_batches_are_torch_tensors_on_cpu(index_file):
    for x in next(iter(Loader(index_file, batch_size=3, num_workers=1))):
        assert isinstance(x, torch.Tensor) and x.device.type == "cpu" and x.is_contiguous()


def test_iterator_len(index_file):
    loader = Loader(index_file, batch_size=10, num_workers=1)
    it = iter(loader)
    assert len(it) == 10
    next(it)
    assert len(it) == 9


def test_every_field_dropped(index_file):
    try:
        loader = Loader(index_file, batch_size=10, num_workers=1,
                        pipelines={"index": None, "value": None, "vec": None})
    except ValueError:
        return  # refusing it up front is fine too
    batches = list(loader)
    assert len(batches) == len(loader) == 10 and all(b == () for b in batches)
