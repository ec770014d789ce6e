"""FFCV-SSL's public API under ffcv_go: every class and function of its
package (tests/fixtures/ffcv-ssl/signatures.json, read from its source) at
the same module path, with its parameters in the same order and the same
defaults; the re-exports of its packages are the same objects. The few
internals FFCV-SSL's own code uses and ffcv_go's Go core replaces are
exempt, each with its reason (listed too in docs/migrating.md)."""
import importlib
import inspect
import json
from pathlib import Path

import numpy as np
import pytest

SIGNATURES = json.loads((Path(__file__).parents[1] / "fixtures/ffcv-ssl/signatures.json").read_text())

# Modules and names a program does not call: FFCV's internals, whose work the
# Go core does; ffcv_go has no Python counterpart to give their signature.
EXEMPT = {
    "ffcv.benchmarks.__main__": "FFCV's micro-benchmark runner (python -m ffcv.benchmarks); ffcv_go's benchmarks "
                                "are bench/*.py, and ffcv_go.benchmarks keeps FFCV's Benchmark/benchmark/run_all "
                                "API for suites of your own",
    "ffcv.benchmarks.suites": "the package of FFCV's own benchmark suites (below)",
    "ffcv.benchmarks.suites.image_read": "a suite of FFCV's own benchmark runner, timing FFCV's Python image reader",
    "ffcv.benchmarks.suites.jpeg_decode": "a suite of FFCV's own benchmark runner, timing its OpenCV/TurboJPEG decoder",
    "ffcv.benchmarks.suites.memory_read": "a suite of FFCV's own benchmark runner, timing its numba memory reader",
    "ffcv.memory_allocator": "the writer's page allocator; the Go writer (core/beton) allocates pages",
    "ffcv.memory_managers.process_cache.page_reader": "the process cache's reader threads; the Go core's "
                                                       "process cache (core/cache) reads pages",
    "ffcv.memory_managers.process_cache.schedule": "the process cache's page schedule; the Go loader schedules "
                                                    "page reads ahead of its workers",
    ("ffcv.writer", "handle_sample"): "the writer's per-sample worker step; the Go writer encodes samples",
    ("ffcv.writer", "worker_job_indexed_dataset"): "the writer's worker process loop; DatasetWriter fetches items "
                                                   "in its own pool and the Go writer encodes them",
    ("ffcv.writer", "worker_job_webdataset"): "the writer's worker process loop for WebDataset shards (see "
                                              "worker_job_indexed_dataset)",
    ("ffcv.traversal_order.quasi_random", "generate_order_inner"): "QUASI_RANDOM's numba kernel; the Go core "
                                                                   "(core/order) computes the order",
    ("ffcv.transforms.colorjitter", "apply_cj"): "RandomColorJitter's numba kernel; the Go core runs the jitter",
    ("ffcv.transforms.gaussian_blur", "apply_blur"): "GaussianBlur's numba kernel; the Go core runs the blur",
    ("ffcv.loader.epoch_iterator", "EpochIterator"): "made by Loader.__iter__ only; its constructor takes the "
                                                     "Go loader's build and epoch",
    ("ffcv.memory_managers.os_cache", "OSCacheContext"): "made by OSCacheManager.schedule_epoch only; the Go "
                                                         "core owns the map",
}

# Defaults ffcv_go keeps where FFCV 1.0 and FFCV-SSL disagree.
DEFAULTS_KEPT = {
    ("ffcv.transforms.translate", "RandomTranslate", "fill"): "FFCV 1.0's (0, 0, 0); FFCV-SSL's is "
                                                              "(128, 128, 128)",
}

# Defaults ffcv_go adds to parameters FFCV-SSL requires: every FFCV-SSL call
# passes them, so its programs are unaffected.
DEFAULTS_ADDED = {
    ("ffcv.fields.rgb_image", "CenterCropRGBImageDecoder", "ratio"): "224/256, ffcv-imagenet's DEFAULT_CROP_RATIO",
}


# Classes with two call forms (FFCV 1.0's and FFCV-SSL's): their __init__
# binds its arguments to one of these signatures (see the test of each form).
def _forms():
    from ffcv_go.loader import loader
    from ffcv_go import reader
    return {("ffcv.loader.loader", "Loader"): loader._ffcv_ssl_form, ("ffcv.reader", "Reader"): reader._ffcv_ssl_form}


def _ours(module):
    return "ffcv_go" + module[len("ffcv"):]


def _exempt(module, name=None):
    return EXEMPT.get(module) or EXEMPT.get((module, name))


def _entries():
    for module, names in sorted(SIGNATURES.items()):
        for name, entry in sorted(names.items()):
            yield module, name, entry


@pytest.mark.parametrize("module", sorted(SIGNATURES))
def test_module_exists(module):
    if _exempt(module):
        return
    importlib.import_module(_ours(module))


def _param_list(obj, theirs):
    """Our parameters as [(name, kind, default)], and whether self is in them."""
    sig = inspect.signature(obj)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


_KINDS = {"positional": inspect.Parameter.POSITIONAL_OR_KEYWORD, "var_positional": inspect.Parameter.VAR_POSITIONAL,
          "keyword_only": inspect.Parameter.KEYWORD_ONLY, "var_keyword": inspect.Parameter.VAR_KEYWORD}


def _same_default(ours, source, namespace):
    value = eval(source, {"np": np, **namespace})
    if isinstance(value, (list, tuple)) and isinstance(ours, (list, tuple)):
        return len(value) == len(ours) and all(np.isclose(a, b) for a, b in zip(value, ours))
    if isinstance(value, float) or isinstance(ours, float):
        return ours is not None and np.isclose(value, ours)
    return value == ours and type(value) is type(ours)


def check_signature(module, name, obj, theirs, namespace):
    """Theirs, in order: the same names, kinds and defaults; anything of ours
    after them has a default."""
    forms = _forms()
    if (module, name) in forms:
        ours = _param_list(forms[(module, name)], theirs)
        theirs = [p for p in theirs if p[0] != "self"]
    else:
        target = obj.__init__ if inspect.isclass(obj) else obj
        ours = _param_list(target, theirs)
    if inspect.isclass(obj) and (module, name) not in forms:
        assert ours[0][0] == "self", f"{module}.{name}: {ours}"
    assert len(ours) >= len(theirs), f"{module}.{name}: ours {[p[0] for p in ours]}, FFCV-SSL's {[p[0] for p in theirs]}"
    for (tname, tkind, tdefault), (oname, okind, odefault) in zip(theirs, ours):
        where = f"{module}.{name}({tname})"
        assert oname == tname, f"{where}: ours has {oname} in its place"
        assert okind == _KINDS[tkind], f"{where}: ours is {okind}, FFCV-SSL's {tkind}"
        if tkind in ("var_positional", "var_keyword") or tname == "self":
            continue
        if tdefault is None and (module, name, tname) in DEFAULTS_ADDED:
            continue
        if tdefault is None:
            assert odefault is inspect.Parameter.empty, f"{where}: required in FFCV-SSL, ours defaults to {odefault!r}"
        elif (module, name, tname) in DEFAULTS_KEPT:
            assert odefault is not inspect.Parameter.empty, where
        else:
            assert odefault is not inspect.Parameter.empty, f"{where}: FFCV-SSL's defaults to {tdefault}, ours is required"
            assert _same_default(odefault, tdefault, namespace), f"{where}: ours {odefault!r}, FFCV-SSL's {tdefault}"
    for oname, okind, odefault in ours[len(theirs):]:
        assert odefault is not inspect.Parameter.empty or okind in (inspect.Parameter.VAR_POSITIONAL,
                                                                    inspect.Parameter.VAR_KEYWORD), \
            f"{module}.{name}: our extra parameter {oname} needs a default"


@pytest.mark.parametrize("module,name,entry", [e for e in _entries()], ids=[f"{m}.{n}" for m, n, _ in _entries()])
def test_name_and_signature(module, name, entry):
    if _exempt(module, name):
        return
    mod = importlib.import_module(_ours(module))
    assert hasattr(mod, name), f"{_ours(module)} has no {name}"
    obj = getattr(mod, name)
    if entry["kind"] == "reexport":
        source = getattr(importlib.import_module(_ours(entry["from"])), entry["name"])
        assert obj is source, f"{_ours(module)}.{name} is not {_ours(entry['from'])}.{entry['name']}"
        return
    assert inspect.isclass(obj) == (entry["kind"] == "class"), f"{module}.{name} is a {entry['kind']}"
    if entry.get("params") is not None:
        check_signature(module, name, obj, entry["params"], vars(mod))


def test_exemptions_name_what_ffcv_ssl_has():
    """Every exemption names a module or a name of FFCV-SSL's, and says why."""
    for key, reason in {**EXEMPT, **DEFAULTS_KEPT, **DEFAULTS_ADDED}.items():
        module, *rest = (key,) if isinstance(key, str) else key
        assert module in SIGNATURES and len(reason) > 20, key
        if rest:
            assert rest[0] in SIGNATURES[module], key
            if len(rest) > 1:
                assert rest[1] in [p[0] for p in SIGNATURES[module][rest[0]]["params"]], key


# ---- the two call forms of Loader and Reader --------------------------------------------

@pytest.fixture(scope="module")
def numbers(tmp_path_factory):
    from conftest import write
    from ffcv_go.fields import IntField
    return write(tmp_path_factory.mktemp("ssl_api") / "n.beton", {"n": IntField()}, [(i,) for i in range(10)])


def _ids(loader):
    return [int(v) for batch in loader for v in np.asarray(batch[0]).reshape(-1)]


def test_loader_forms(numbers):
    from ffcv_go import Loader
    from ffcv_go.loader import OrderOption
    from ffcv_go.traversal_order import Random
    seq = list(range(10))
    # FFCV-SSL: (path, batch_size, order, num_workers, ...), by position and by keyword.
    ssl = Loader(numbers, 4, OrderOption.SEQUENTIAL, 1, drop_last=False)
    assert (ssl.path, ssl.num_workers, _ids(ssl)) == (str(numbers), 1, seq)
    ssl = Loader(path=numbers, batch_size=4, order=OrderOption.RANDOM, seed=3)
    assert len(_ids(ssl)) == 8 and sorted(_ids(ssl)) != seq[:8]
    assert _ids(Loader(numbers, 5, Random, 2, seed=1)) == _ids(Loader(numbers, 5, order=Random, num_workers=2, seed=1))
    # FFCV 1.0: (fname, batch_size, num_workers, os_cache, order, ...).
    v1 = Loader(numbers, 4, 2, True, OrderOption.SEQUENTIAL, drop_last=False)
    assert (v1.fname, v1.num_workers, v1.os_cache, _ids(v1)) == (str(numbers), 2, True, seq)
    assert _ids(Loader(fname=numbers, batch_size=3, drop_last=False)) == seq
    # FFCV-SSL's training script: path first, the rest by keyword.
    assert _ids(Loader(numbers, batch_size=2, num_workers=1, order=OrderOption.SEQUENTIAL_CONTIGUOUS,
                       os_cache=True, drop_last=True, distributed=False, custom_field_mapper={})) == seq


@pytest.mark.parametrize("call,match", [
    (lambda L, p, O: L(fname=p, path=p, batch_size=2), "fname= .* or path= .*not both"),
    (lambda L, p, O: L(path=p, batch_size=2), "FFCV-SSL's Loader.*order"),
    (lambda L, p, O: L(p, 2, O.RANDOM, 1, True, False, 0, None, {}, {}, True, 3, False, None, {}, "raise", 0, 0,
                       None, "extra"), "too many positional"),
    (lambda L, p, O: L(p, 2, O.RANDOM, order=O.SEQUENTIAL), "multiple values for argument 'order'"),
    (lambda L, p, O: L(p, 2, 1, path=p), "multiple values for argument 'path'"),
    (lambda L, p, O: L(p, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21), "FFCV 1.0's Loader"),
])
def test_loader_forms_refuse_what_is_ambiguous(numbers, call, match):
    from ffcv_go import Loader
    from ffcv_go.loader import OrderOption
    with pytest.raises(TypeError, match=match):
        call(Loader, numbers, OrderOption)


def test_reader_forms(numbers):
    from ffcv_go.fields import IntField
    from ffcv_go.reader import Reader
    for r in (Reader(numbers), Reader(path=numbers), Reader(fname=numbers), Reader(numbers, {})):
        assert r.field_names == ["n"] and list(r.handlers) == ["n"]
    r = Reader(numbers, custom_field_mapper={"view": "n", "again": "n"})
    assert list(r.handlers) == ["n", "view", "again"] and r.field_names == ["n"]
    assert type(r.handlers["view"]) is IntField and r.handlers["view"] is not r.handlers["n"]
    with pytest.raises(TypeError, match="not both"):
        Reader(fname=numbers, path=numbers)
    with pytest.raises(ValueError, match="'nope', which is not a field"):
        Reader(numbers, custom_field_mapper={"v": "nope"})
    with pytest.raises(ValueError, match="'n' is already a field"):
        Reader(numbers, custom_field_mapper={"n": "n"})


@pytest.mark.parametrize("world", [2, 3, 4])
def test_sequential_contiguous_blocks(numbers, world, monkeypatch):
    """Distributed, rank r reads a contiguous block of the indices padded
    from their head (FFCV-SSL's DistributedSamplerProxy), where SEQUENTIAL
    strides; both are checked against the torch samplers."""
    from torch.utils.data import DistributedSampler
    from ffcv_go import Loader
    from ffcv_go.loader import OrderOption
    from ffcv_go.traversal_order.sequential import DistributedSamplerProxy
    for rank in range(world):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", str(world))
        for option, sampler in [(OrderOption.SEQUENTIAL_CONTIGUOUS, DistributedSamplerProxy),
                                (OrderOption.SEQUENTIAL, DistributedSampler)]:
            got = _ids(Loader(numbers, 1, option, 1, distributed=True, drop_last=False))
            assert got == list(sampler(range(10), num_replicas=world, rank=rank, shuffle=False)), (option, rank)
    blocks = [list(DistributedSamplerProxy(range(10), num_replicas=world, rank=r, shuffle=False)) for r in range(world)]
    per = -(-10 // world)
    assert blocks == [[(r * per + i) % 10 for i in range(per)] for r in range(world)]
