"""Custom Python Operations in pipelines (FFCV's protocol) and the exception path."""
import numpy as np
import pytest
import torch

from conftest import N_INDEX, collect, ids, index_sample, resources, settle

from ffcv_go import Loader, _lib
from ffcv_go.loader import OrderOption
from ffcv_go.pipeline import Compiler
from ffcv_go.pipeline.allocation_query import AllocationQuery
from ffcv_go.pipeline.operation import Operation
from ffcv_go.pipeline.state import State
from ffcv_go.fields.decoders import IntDecoder, NDArrayDecoder




class AddIndex(Operation):
    """dst = inp + 1000 * sample id, into memory it asks for (FFCV-style, with_indices)."""

    def declare_state_and_memory(self, previous_state):
        return previous_state, AllocationQuery(previous_state.shape, previous_state.dtype)

    def generate_code(self):
        def code(inp, dst, indices):
            for i in range(inp.shape[0]):
                dst[i] = inp[i] + 1000 * indices[i]
            return dst[:inp.shape[0]]
        code.with_indices = True
        return code


class Explode(Operation):
    """Raises when a batch holds sample `bad` while `armed[0]` is true."""

    def __init__(self, bad, armed):
        super().__init__()
        self.bad, self.armed = bad, armed

    def declare_state_and_memory(self, previous_state):
        return previous_state, None

    def generate_code(self):
        bad, armed = self.bad, self.armed

        def code(inp, dst):
            if armed[0] and (inp[:, 0] == bad).any():
                raise KeyError(f"sample {bad} is cursed")
            return inp
        return code


class CastToFloat32(Operation):
    def declare_state_and_memory(self, previous_state):
        return (State(previous_state.jit_mode, previous_state.device, previous_state.shape, np.dtype(np.float32)),
                AllocationQuery(previous_state.shape, np.dtype(np.float32)))

    def generate_code(self):
        def code(inp, dst):
            dst[:inp.shape[0]] = inp
            return dst[:inp.shape[0]]
        return code


def test_custom_op_python(index_file, no_jit):
    loader = Loader(index_file, batch_size=10, num_workers=2, drop_last=False, order=OrderOption.RANDOM, seed=2,
                    pipelines={"vec": [NDArrayDecoder(), AddIndex()], "value": [CastToFloat32()]})
    batches = collect(loader)
    got_ids = ids(batches)
    assert got_ids.tolist() == np.random.default_rng(2).permutation(N_INDEX).tolist()
    for index, value, vec in batches:
        want = np.stack([index_sample(i)[2] for i in index[:, 0]]) + 1000 * index[:, :1]
        assert vec.dtype == np.int32 and np.array_equal(vec, want)
        assert value.dtype == np.float32 and value[:, 0].tolist() == [np.float32(index_sample(i)[1]) for i in index[:, 0]]


def test_custom_op_numba(index_file):
    pytest.importorskip("numba")
    assert Compiler.is_enabled
    loader = Loader(index_file, batch_size=16, num_workers=2, drop_last=False,
                    pipelines={"vec": [NDArrayDecoder(), AddIndex()], "value": None})
    batches = collect(loader)
    for index, vec in batches:
        want = np.stack([index_sample(i)[2] for i in index[:, 0]]) + 1000 * index[:, :1]
        assert np.array_equal(vec, want)
    assert ids(batches).tolist() == list(range(N_INDEX))


def test_exception_in_custom_op_reaches_consumer(index_file, no_jit):
    settle()
    before = resources()
    armed = [True]
    loader = Loader(index_file, batch_size=8, num_workers=2, order=OrderOption.SEQUENTIAL, drop_last=False,
                    pipelines={"index": [IntDecoder(), Explode(50, armed)]})
    seen = []
    with pytest.raises(KeyError, match="sample 50 is cursed"):
        for b in loader:
            seen.append(b[0][:, 0].tolist())
    assert len(seen) == 6 and seen[-1] == list(range(40, 48))  # batch 6 holds samples 48..55
    # The loader is usable again: the next iter() is a whole, correct epoch.
    armed[0] = False
    batches = collect(loader)
    assert ids(batches).tolist() == list(range(N_INDEX))
    for index, value, vec in batches:
        assert np.array_equal(vec, np.stack([index_sample(i)[2] for i in index[:, 0]]))
    # And it raises again when armed (it is not stuck in a failed state either way).
    armed[0] = True
    with pytest.raises(KeyError):
        collect(loader)
    del loader, batches, b
    settle()
    assert resources()[0] == before[0]


def test_exception_in_numba_op(index_file):
    pytest.importorskip("numba")

    class NumbaExplode(Operation):
        def declare_state_and_memory(self, previous_state):
            return previous_state, None

        def generate_code(self):
            def code(inp, dst):
                for i in range(inp.shape[0]):
                    if inp[i, 0] == 77:
                        raise ValueError("numba op met sample 77")
                return inp
            return code
    loader = Loader(index_file, batch_size=10, num_workers=2, drop_last=False,
                    pipelines={"index": [IntDecoder(), NumbaExplode()]})
    for _ in range(2):  # every epoch fails at the same batch, after the same good ones
        got = []
        with pytest.raises(ValueError, match="77"):
            for b in loader:
                got.append(b[0])
        # No ToTensor after jit-mode custom code: numpy batches, as FFCV.
        assert all(isinstance(x, np.ndarray) for x in got)
        assert np.concatenate(got)[:, 0].tolist() == list(range(70))


def test_exception_in_torch_module(index_file):
    class Fails(torch.nn.Module):
        def forward(self, x):
            if (x == 30).any():
                raise RuntimeError("module saw 30")
            return x
    loader = Loader(index_file, batch_size=10, num_workers=1, drop_last=False, pipelines={"index": [IntDecoder(), Fails()]})
    it = iter(loader)
    for _ in range(3):
        next(it)
    with pytest.raises(RuntimeError, match="module saw 30"):
        next(it)
    sel = [i for i in range(N_INDEX) if i != 30]
    ok = Loader(index_file, batch_size=10, num_workers=1, drop_last=False, indices=sel,
                pipelines={"index": [IntDecoder(), Fails()]})
    assert ids(collect(ok)).tolist() == sel
