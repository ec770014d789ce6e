"""Loader: batches of torch tensors from a .beton file (FFCV's ffcv.loader.Loader)."""
import atexit
import enum
import inspect
import json
import os
import warnings
import weakref

import numpy as np
import torch

from .. import _lib
from .._trace import Tracer
from ..fields.rgb_image import RGBImageField, _ImageDecoder
from ..pipeline import PipelineSpec
from ..pipeline.operation import Operation
from ..pipeline.pipeline import PyStage, plan_output
from ..reader import Reader
from ..traversal_order import TraversalOrder, Sequential, SequentialContiguous, Random, QuasiRandom, Bucketed, Rect
from ..transforms.ops import ModuleWrapper, ToTensor
from ..utils import _cpu_count
from ..detection import _link_targets
from ._builds import _Build, _Builds
from ._elastic import Resume
from .epoch_iterator import EpochIterator, iterating_threads
from .mixture import Mixture


class OrderOption(enum.Enum):
    SEQUENTIAL = Sequential
    SEQUENTIAL_CONTIGUOUS = SequentialContiguous  # FFCV-SSL's
    RANDOM = Random
    QUASI_RANDOM = QuasiRandom
    BUCKETED = Bucketed  # batches by total duration (order_kwargs: see _bucketing_args)
    RECT = Rect  # Ultralytics' rect batches: sorted by image aspect ratio


ORDER_TYPE = OrderOption
ORDER_MAP = {o: o.value for o in OrderOption}

# As FFCV: FFCV_DEFAULT_CACHE_PROCESS=1 in the environment makes the process
# cache the default (os_cache=False).
DEFAULT_PROCESS_CACHE = int(os.environ.get("FFCV_DEFAULT_CACHE_PROCESS", "0"))
DEFAULT_OS_CACHE = not DEFAULT_PROCESS_CACHE


def _default_workers(distributed):
    """Worker threads when num_workers is left at its default (< 1 or None).

    One process: every core in the affinity mask (FFCV's rule). Several loader
    processes on one node (distributed=True, or LOCAL_WORLD_SIZE set as torchrun
    and Composer's launcher do): each takes its share, cores // local world size,
    at least 1, so that 8 ranks on a node do not run 8 x cores threads. The local
    world size is LOCAL_WORLD_SIZE, else (distributed, single node assumed) the
    world size.
    """
    cores = _cpu_count()
    local = os.environ.get("LOCAL_WORLD_SIZE")
    if local is not None and local.strip():
        try:
            procs = int(local)
        except ValueError:
            procs = 0
        if procs < 1:
            raise ValueError(f"LOCAL_WORLD_SIZE={local!r} is not a positive integer")
    elif distributed:
        procs = _dist_info(True)[1]
    else:
        return cores
    return max(1, cores // procs)


def _dist_info(distributed):
    if not distributed:
        return 0, 1
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    raise RuntimeError("distributed=True needs torch.distributed initialised or RANK/WORLD_SIZE set")


class Loader:
    """Iterates over a .beton file (or shards read as one: see Reader), or a
    :class:`Mixture` of datasets by weight, in batches of torch tensors.

    Two call forms, FFCV 1.0's and FFCV-SSL's, with the same arguments and
    semantics as theirs; every ``iter()`` starts the next epoch::

        Loader(fname, batch_size, num_workers=-1, os_cache=DEFAULT_OS_CACHE, order=OrderOption.SEQUENTIAL,
               distributed=False, seed=None, indices=None, pipelines={}, custom_fields={}, drop_last=True,
               batches_ahead=3, recompile=False, order_kwargs={}, on_error="raise", max_resident_pages=0,
               max_batch_memory=0, trace=None, custom_field_mapper=None)       # FFCV 1.0
        Loader(path, batch_size, order, num_workers=-1, os_cache=DEFAULT_OS_CACHE, distributed=False,
               seed=None, indices=None, pipelines={}, custom_fields={}, drop_last=True, batches_ahead=3,
               recompile=False, custom_field_mapper=None, order_kwargs={}, on_error="raise",
               max_resident_pages=0, max_batch_memory=0, trace=None)           # FFCV-SSL

    FFCV-SSL's form is taken when ``path=`` is given or the third positional
    argument is an order (an OrderOption or a TraversalOrder subclass), FFCV
    1.0's otherwise; ``fname=`` and ``path=`` together are a TypeError.
    ``help()``, ``inspect.signature`` and IDEs show FFCV 1.0's form.

    Batches stay valid as long as you hold them. Arguments of ffcv_go's own:
    on_error ('raise' or 'skip' bad samples), max_resident_pages (process
    cache bound; by default room for the workers' read-ahead plus, for
    QUASI_RANDOM, its window of open pages), max_batch_memory (bytes of
    batches you may hold), trace (a path: write a Chrome/Perfetto trace
    there; True: time the workers' stages for ``stats`` only; see
    ``ffcv_go._trace``). num_workers < 1 (the default): the process's cores,
    split between the loader processes of a node when distributed (see
    ``_default_workers``).
    """

    def __init__(self, *args, **kwargs):
        a = _bind_loader_args(args, kwargs)
        self._init(**a)

    def _init(self, fname, batch_size, num_workers, os_cache, order, distributed, seed, indices, pipelines,
              custom_fields, drop_last, batches_ahead, recompile, order_kwargs, on_error, max_resident_pages,
              max_batch_memory, trace, custom_field_mapper):
        # A file, a directory or glob of shards, or a list of these (see Reader);
        # or a Mixture of such datasets.
        self.mixture = fname if isinstance(fname, Mixture) else None
        if self.mixture is not None:
            self.fname = repr(fname)
            _check_mixture_args(indices, custom_fields, order)
        else:
            self.fname = [os.fspath(p) for p in fname] if isinstance(fname, (list, tuple)) else os.fspath(fname)
        self.path = self.fname  # FFCV-SSL's name
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"batch_size {batch_size!r} must be a positive integer")
        if batches_ahead < 0:
            raise ValueError(f"batches_ahead {batches_ahead} must be >= 0")
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error {on_error!r} must be 'raise' or 'skip'")
        self.batch_size = int(batch_size)
        self.num_workers = _default_workers(distributed) if num_workers is None or num_workers < 1 else int(num_workers)
        self.os_cache = bool(os_cache)
        self.distributed = bool(distributed)
        self.drop_last = bool(drop_last)
        self.batches_ahead = int(batches_ahead)
        self.recompile = recompile
        self.order_kwargs = dict(order_kwargs)
        self.custom_fields = dict(custom_fields)
        self.custom_field_mapper = dict(custom_field_mapper or {})
        self.on_error = on_error
        self._max_resident_pages = int(max_resident_pages)
        self._max_batch_memory = int(max_batch_memory)
        self._pipelines_arg = pipelines
        self._order_arg = order
        self.rank, self.world_size = _dist_info(self.distributed)

        self._tracer = Tracer(trace)
        if self.mixture is not None:
            self.reader = Reader._of_mixture(self.mixture)
            self._tracer.sources = self.reader.sources
            # Errors say "mixture of 3 sources" and name the source at fault, not the whole Mixture(...).
            self.fname = self.path = self.reader.file_name
        else:
            self.reader = Reader(self.fname, custom_handlers=self.custom_fields)
        if not self.reader._info["mapped"]:
            # s3:// and http(s):// files have no OS page cache to lean on: their
            # pages always go through the process cache (os_cache=True, FFCV's
            # default, is overridden rather than refused).
            self.os_cache = False
        n = self.reader.num_samples
        self._all_samples = indices is None
        self._indices = None
        if indices is not None:
            idx = np.asarray(indices).reshape(-1)
            if idx.size and (not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 or idx.max() >= n):
                raise ValueError(f"indices must be sample ids in [0, {n})")
            self._indices = idx.astype(np.uint64)

        order_cls = order.value if isinstance(order, OrderOption) else order
        if not (isinstance(order_cls, type) and issubclass(order_cls, TraversalOrder)):
            raise ValueError(f"order {order!r} must be an OrderOption or a TraversalOrder subclass")
        if seed is None:
            if self.distributed and order_cls in (Random, QuasiRandom, Bucketed):
                # Every rank must draw the same global order (a random seed per
                # process would overlap the ranks' shares).
                warnings.warn(f"distributed {order_cls.__name__} order without a seed: using seed 0 so ranks agree")
                seed = 0
            else:
                seed = int(np.random.randint(0, 2**31 - 1))
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
            # Below 2**63, seed + epoch fits the Go side's uint64 for any epoch.
            raise ValueError(f"seed {seed!r} must be an integer in [0, 2**63)")
        self.seed = int(seed)
        self._order_cls = order_cls
        self._bucketing = _bucketing_args(self.order_kwargs, self.reader) if order_cls is Bucketed else None
        self._lengths = {}  # a bucketed order's batches per epoch, by epoch
        # Custom orders get order_kwargs; the built-in ones read theirs (window_pages).
        self.traversal_order = order_cls(self) if hasattr(order_cls, "_go_name") else \
            order_cls(self, **self.order_kwargs)

        self._outputs, self._field_names = self._plan_outputs(pipelines)
        _check_devices(self._outputs)
        self._by_source = self._source_pipelines()
        # Builds still in use; closed with the loader, at close() or when the
        # loader is collected or the interpreter exits (then no new one starts).
        self._builds = _Builds()
        self._finalizer = weakref.finalize(self, self._builds.close)
        _live_loaders.add(self)
        self._compiled = {}  # id(custom operation) -> its compiled code
        self._build = None
        self._build_epoch(recompile=True)  # so bad pipelines fail here, and len() is known
        self._length = self._build.length
        self.next_epoch = 0
        self._resume_batch = 0
        self._current = None  # a weak reference to the latest epoch's iterator
        self._resume = Resume()

    @property
    def sources(self):
        """A Mixture's sources as opened, or None for one dataset: per source,
        ``name``, ``files``, ``first_sample`` (sample ids number the sources one
        after the other), ``samples``, ``per_epoch`` (the exact number every
        epoch takes, over all ranks), ``repeat`` (per_epoch / samples) and
        ``proportion`` (its share of the epoch); then the side sources
        (weight 0, read by operations only), with ``first_sample`` None
        (they are not among the mixture's samples) and ``per_epoch`` 0."""
        if self.mixture is None:
            return None
        total = sum(s["take"] for s in self.reader.sources)
        return [{"name": s["name"], "files": list(s["files"]), "first_sample": s["start"], "samples": s["samples"],
                 "per_epoch": s["take"], "repeat": s["take"] / s["samples"], "proportion": s["take"] / total}
                for s in self.reader.sources] + \
            [{"name": s["name"], "files": list(s["files"]), "first_sample": None, "samples": s["samples"],
              "per_epoch": 0, "repeat": 0.0, "proportion": 0.0} for s in self.reader.side]

    @property
    def indices(self):
        """The samples this loader draws from (built on first use for huge
        files; for a Mixture every sample of its sources, which its epochs take
        from by weight)."""
        if self._indices is None:
            self._indices = np.arange(self.reader.num_samples, dtype=np.uint64)
        return self._indices

    # ---- building -------------------------------------------------------------

    def _plan_outputs(self, pipelines):
        """[(field index, name, [ops], view)] in file order, then the views of
        custom_field_mapper in its order, then PipelineSpec extras. view keys
        an output's random draws apart from the other outputs of its field
        (see _view_key); a field's own output has view 0."""
        names = self.reader.field_names
        outputs = []
        for i, name in enumerate(names):
            if name in pipelines and pipelines[name] is None:
                continue
            ops = pipelines.get(name)
            if isinstance(ops, PipelineSpec):
                continue
            outputs.append((i, name, self._with_decoder(name, list(ops) if ops is not None else None), 0))
        for view, source in self.custom_field_mapper.items():
            # FFCV-SSL's views: another output decoded from field `source`,
            # with the pipeline given under the view's own name.
            if not isinstance(view, str) or not isinstance(source, str):
                raise TypeError(f"custom_field_mapper maps names to field names, got {view!r}: {source!r}")
            if source not in names:
                raise ValueError(f"custom_field_mapper maps {view!r} to {source!r}, which is not a field of "
                                 f"{self.fname} (fields: {', '.join(names)})")
            if view in names:
                raise ValueError(f"custom_field_mapper: {view!r} is already a field of {self.fname}; "
                                 f"give the view another name")
            if view in pipelines and pipelines[view] is None:
                continue
            ops = pipelines.get(view)
            if isinstance(ops, PipelineSpec):
                raise ValueError(f"custom_field_mapper view {view!r}: give it a list of operations, not a PipelineSpec")
            ops = self._with_decoder(source, list(ops) if ops is not None else None)
            if isinstance(ops[0], _ImageDecoder) and not isinstance(self.reader.handlers[source], RGBImageField):
                raise ValueError(f"custom_field_mapper view {view!r}: {type(ops[0]).__name__} decodes images, and "
                                 f"field {source!r} is a {type(self.reader.handlers[source]).__name__}")
            outputs.append((names.index(source), view, ops, _view_key(view)))
        for out_name, spec in pipelines.items():
            if isinstance(spec, PipelineSpec) and isinstance(spec.source, Operation):
                # The output of an operation of another pipeline, then more: the
                # shared prefix is run again (same keys, so the same values).
                found = [(f, ops[:k + 1], v) for f, _, ops, v in outputs for k, op in enumerate(ops) if op is spec.source]
                if len(found) != 1:
                    raise ValueError(f"PipelineSpec {out_name!r}: its source {spec.source!r} is "
                                     f"{'in no' if not found else 'in more than one'} pipeline")
                fidx, prefix, view = found[0]
                outputs.append((fidx, out_name, prefix + _wrap_modules(spec.transforms), view))
            elif isinstance(spec, PipelineSpec):
                if spec.source not in names:
                    raise ValueError(f"PipelineSpec {out_name!r}: no field {spec.source!r} in {self.fname}")
                ops = ([spec.decoder] if spec.decoder is not None else []) + list(spec.transforms)
                # Another view of the field: it draws under its own name's key.
                outputs.append((names.index(spec.source), out_name, self._with_decoder(spec.source, ops),
                                _view_key(out_name)))
            elif out_name not in names and out_name not in self.custom_field_mapper:
                raise ValueError(f"pipelines names {out_name!r}, which is not a field of {self.fname} "
                                 f"(fields: {', '.join(names)})")
        return outputs, names

    def _source_pipelines(self):
        """{output index: [ops or None per source]} of the Sources' own
        pipelines, checked against the rule (see Source): for a field that
        comes out once, with no targets following it."""
        if self.mixture is None or not any(s.pipelines for s in self.mixture.sources):
            return {}
        out = {}
        taken = self.mixture._taken()  # the loader's sources, side sources left out
        for k, src in enumerate(taken):
            for name, ops in src.pipelines.items():
                if name not in self.reader.field_names:
                    raise ValueError(f"Source {src.name!r}: pipelines names {name!r}, which is not a field of the "
                                     f"mixture (fields: {', '.join(self.reader.field_names)})")
                fidx = self.reader.field_names.index(name)
                readers = [i for i, o in enumerate(self._outputs) if o[0] == fidx]
                own = [i for i in readers if self._outputs[i][1] == name]
                if not own:
                    raise ValueError(f"Source {src.name!r}: a pipeline of {name!r}, which the loader leaves out")
                if len(readers) > 1:
                    raise ValueError(f"Source {src.name!r}: a pipeline of {name!r}, which other outputs (views) "
                                     f"read too: a field with views has one pipeline for every source")
                out.setdefault(own[0], [None] * len(taken))[k] = list(ops)
        targets = [n for i, n, _, _ in self._outputs
                   if type(self.reader.handlers[self.reader.field_names[i]]).__name__ in ("RaggedArrayField", "MaskField")]
        if out and targets:
            raise ValueError(f"pipelines by source with target outputs ({', '.join(targets)}): targets follow one "
                             f"pipeline of their image")
        return out

    def _plan_sources(self, plans, metadata, recompile):
        """Plans the Sources' own pipelines beside the loader's: only their
        per-sample built-in part differs (it runs in Go on the source's
        samples); what follows it, if written, must be the loader's."""
        for i, per_source in self._by_source.items():
            main = plans[i]
            fidx, name = main.field, main.name
            field = self.reader.handlers[name]
            if main.go_ops is None:
                raise ValueError(f"output {name!r}: pipelines by source need a built-in decoder")
            tail = [type(getattr(st, "op", st)) for st in main.steps]
            main.source_ops = []
            for src, ops in zip(self.mixture._taken(), per_source):
                if ops is None:
                    main.source_ops.append(None)
                    continue
                plan = plan_output(fidx, name, self._with_decoder(name, ops), field, metadata[f"f{fidx}"],
                                   lambda: self._memory_read, self._stage_maker(metadata[f"f{fidx}"], recompile))
                after = [type(getattr(st, "op", st)) for st in plan.steps]
                if plan.go_ops is None or (after and after != tail):
                    raise ValueError(f"Source {src.name!r}: its pipeline of {name!r} may change the built-in "
                                     f"per-sample operations only; what follows them (ToTensor, ToDevice, Python "
                                     f"operations) is the loader's pipeline's: {[t.__name__ for t in tail]}")
                main.source_ops.append(plan.go_ops)

    def _with_decoder(self, name, ops):
        field = self.reader.handlers[name]
        if ops is None:
            ops = [ToTensor()]
        ops = _wrap_modules(ops)
        if ops and hasattr(ops[0], "_as_decoder"):
            # FFCV-SSL's RandomResizedCrop, CenterCrop and CornerCrop are
            # decoders when they open a pipeline.
            ops = [ops[0]._as_decoder()] + ops[1:]
        if ops and isinstance(ops[0], Operation) and (ops[0]._decoder or isinstance(ops[0], field.get_decoder_class())):
            return ops
        return [field.get_decoder_class()()] + ops

    def _build_epoch(self, recompile=False):
        """Re-derives every operation's state for the coming epoch, as FFCV
        does each iter(): a changed decoder output_size or attribute takes
        effect. The Go side is rebuilt only when what it runs changed, or
        when recompile (then custom code is compiled again too)."""
        if self._builds.closed:
            raise ValueError(f"{self.fname}: the loader is closed")
        metadata = self.reader.metadata
        plans = []
        for fidx, name, ops, view in self._outputs:
            field = self.reader.handlers[self.reader.field_names[fidx]]
            plans.append(plan_output(fidx, name, ops, field, metadata[f"f{fidx}"], lambda: self._memory_read,
                                     self._stage_maker(metadata[f"f{fidx}"], recompile), view=view))
        _link_targets(self._outputs, plans, self.reader)
        self._plan_sources(plans, metadata, recompile)
        signature = json.dumps([[p.go_signature(), getattr(p, "source_ops", None)] for p in plans])
        old = self._build
        if old is not None and old.signature == signature and not recompile:
            old.adopt(plans)  # same Go programs: only the Python stages are new
            return old
        build = _Build(self, plans, signature)
        self._builds.add(build)
        self._build = build
        return build

    def _stage_maker(self, column, recompile):
        """Makes PyStages, compiling a custom operation's code once unless
        recompile (FFCV's Loader(recompile=True) compiles every epoch)."""
        def make(op, state, index, decoder=False):
            key = id(op)
            compiled = None if recompile else self._compiled.get(key)
            buffer = self.reader._mapped("a decoder run in Python") if decoder else None
            st = PyStage(op, state, index, decoder=(column, buffer) if decoder else None, compiled=compiled)
            if st.kind == "custom":
                self._compiled[key] = st.code
            return st
        return make

    @property
    def _memory_read(self):
        """FFCV's memory_read(address, storage_state) for custom operations:
        the allocation starting at address (storage_state: the file's map)."""
        if getattr(self, "_reader_fn", None) is None:
            from ..memory_managers import OSCacheManager
            self._reader_fn = OSCacheManager(self.reader).compile_reader()
        return self._reader_fn

    def _go_order(self, epoch):
        return _lib.loader_order(self._build.handle, epoch)

    @property
    def code(self):
        """What runs the epochs (FFCV's compiled epoch function): the same
        object while nothing is rebuilt, a new one per iter() with recompile=True."""
        return self._build

    def generate_code(self):
        """Plans and builds the pipelines again now (FFCV's generate_code)."""
        self._build_epoch(recompile=True)

    def next_traversal_order(self):
        """The sample order of the next epoch (this rank's)."""
        rest = self._resume.peek(self.next_epoch)
        if rest is not None:
            return rest["ids"].copy()
        return self.traversal_order.sample_order(self.next_epoch)

    @property
    def first_traversal_order(self):
        if getattr(self, "_first_order", None) is None:
            self._first_order = np.asarray(self.traversal_order.sample_order(0))
        return self._first_order

    @property
    def _go_outputs(self):
        return self._build.go_outputs

    # ---- iterating --------------------------------------------------------------

    def __len__(self):
        """Batches per epoch. A bucketed order's number varies by epoch:
        then it is the epoch being iterated (until its end), else the
        epoch the next iter() starts."""
        if self._bucketing is None:
            return self._length
        it = self._current() if self._current is not None else None
        if it is not None and not it.finished:
            return self._batches_in(it.epoch)
        return self._batches_in(self.next_epoch)

    def _batches_in(self, epoch):
        """This rank's batches in a whole epoch."""
        if self._bucketing is None:
            return self._length
        if epoch not in self._lengths:
            if len(self._lengths) > 64:
                self._lengths.clear()
            self._lengths[epoch] = self._resume._describe(self, epoch, "bucketed", 0)["length"]
        return self._lengths[epoch]

    def __iter__(self):
        epoch, start = self.next_epoch, self._resume_batch
        rest = self._resume.take(epoch)
        self.next_epoch += 1
        self._resume_batch = 0
        order, per_rank = None, 1
        if rest is not None:
            order = rest["ids"]  # this rank's part of what the saving run left
        elif not hasattr(self._order_cls, "_go_name"):
            order = np.asarray(self.traversal_order.sample_order(epoch), dtype=np.uint64)
        elif self._order_cls is Random and self.distributed and self.mixture is None:
            order, per_rank = self.traversal_order._torch_order(epoch), 0
        it = EpochIterator(self, self._build_epoch(recompile=self.recompile), epoch, start, order, per_rank,
                           elastic=rest)
        self._current = weakref.ref(it)
        return it

    def state_dict(self):
        """Where to resume: the epoch, the next batch within it, the seed and,
        for the built-in orders, what the run has taken of the epoch (see
        ``load_state_dict``). Synchronous training is assumed: every rank has
        taken the same number of batches, so any rank's state describes all."""
        return self._resume.state_dict(self)

    def load_state_dict(self, state):
        """The next iter() resumes the saved epoch.

        With the saving run's world size, batch size and drop_last it resumes
        exactly at the saved batch (the batches an uninterrupted run would
        have had). Otherwise (elastic resume, for the built-in orders) it
        rebuilds the epoch's global order from the seed, checks it against
        the state's fingerprint, and gives this rank its part of the samples
        the saving run had not taken: each of them once over the new ranks,
        none repeated, every rank the same number of batches (see the guide
        "Elastic resume"). Later epochs are normal epochs at the new world size.
        """
        self._resume.load_state_dict(self, state)

    def _next_epoch_length(self):
        """Batches the next iter() yields (a resumed epoch's rest)."""
        rest = self._resume.peek(self.next_epoch)
        return self._batches_in(self.next_epoch) - self._resume_batch if rest is None else rest["length"]

    def _num_indices(self):
        """The samples of an epoch over all ranks."""
        if self.mixture is not None:
            return sum(s["take"] for s in self.reader.sources)
        return int(self.reader.num_samples) if self._indices is None else int(self._indices.size)

    @property
    def stats(self):
        """Counters: samples_skipped, peak_resident_pages, pages_read, slots, slots_grown;
        for s3:// and http(s):// files requests, bytes_fetched, retries and
        peak_in_flight since the file was opened; and epochs, one entry per
        finished epoch: {epoch, pages_read, requests, bytes_fetched, retries}.
        For a Mixture, ``sources`` (over the finished epochs) and each epoch's
        ``sources``: per source {name, samples (handed out on this rank),
        pages_read, bytes_read, read_ns, requests, bytes_fetched, retries}, where
        bytes_read / read_ns is the rate of one page read from the source's
        storage (the process cache's reads, timed).
        With ``trace``: stages, the workers' time in each stage, and ops, each
        operation's time ({output, op, go_op, where: "go" or "python",
        seconds, count: samples}). Always: wait_seconds and waits, the
        training loop's time in next() and the batches it waited for."""
        return self._tracer.stats(_lib.call_json("ffcv_loader_stats", self._build.handle), self._build.plans)

    def filter(self, field_name, condition):
        """A new Loader over the samples whose decoded field_name satisfies condition."""
        if self.mixture is not None:
            raise ValueError("filter() selects samples of one dataset by their indices; a Mixture takes its "
                             "sources' samples by weight: filter each source's dataset instead")
        if field_name not in self.reader.field_names:
            raise ValueError(f"no field {field_name!r} in {self.fname}")
        pipes = {n: None for n in self.reader.field_names if n != field_name}
        if self._pipelines_arg.get(field_name) is not None:
            pipes[field_name] = self._pipelines_arg[field_name]  # else the default pipeline
        scan = Loader(self.fname, batch_size=max(1, min(1024, self.batch_size)), num_workers=self.num_workers,
                      order=OrderOption.SEQUENTIAL, indices=self.indices, pipelines=pipes,
                      custom_fields=self.custom_fields, drop_last=False)
        keep = []
        for batch in scan:
            values, ids = batch[0], scan._last_ids
            for v, i in zip(values, ids.tolist()):
                if condition(v):
                    keep.append(i)
        return Loader(self.fname, self.batch_size, num_workers=self.num_workers, os_cache=self.os_cache,
                      order=self._order_arg, distributed=self.distributed, seed=self.seed,
                      indices=np.array(keep, dtype=np.int64), pipelines=self._pipelines_arg,
                      custom_fields=self.custom_fields, drop_last=self.drop_last,
                      batches_ahead=self.batches_ahead, order_kwargs=self.order_kwargs, on_error=self.on_error)

    def close(self):
        """Stops every iterator and frees the loader; batches you hold stay valid."""
        self._tracer.close(self._build)
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _check_mixture_args(indices, custom_fields, order):
    """What a Loader over a Mixture does not take, refused with the reason."""
    if indices is not None:
        raise ValueError("indices select samples of one dataset; a Mixture takes its sources' samples by their "
                         "weights (Source(choose=...) takes a number of a source's samples)")
    if custom_fields:
        raise ValueError("custom_fields: a Mixture joins its sources' files into one dataset, which custom fields "
                         "(their heap pointers known only to their handler) do not allow")
    cls = order.value if isinstance(order, OrderOption) else order
    if cls is Bucketed:
        raise ValueError("order BUCKETED batches one dataset's samples by duration; a Mixture draws its sources by "
                         "weight (bucket each source's dataset with a loader of its own)")
    if isinstance(cls, type) and issubclass(cls, TraversalOrder) and not hasattr(cls, "_go_name"):
        raise ValueError(f"order {order!r}: a Mixture's epochs are drawn from its weights by the built-in orders "
                         f"(OrderOption.RANDOM, QUASI_RANDOM or SEQUENTIAL), not by a custom TraversalOrder")


def _ffcv_form(fname, batch_size, num_workers=-1, os_cache=DEFAULT_OS_CACHE, order=OrderOption.SEQUENTIAL,
               distributed=False, seed=None, indices=None, pipelines={}, custom_fields={}, drop_last=True,
               batches_ahead=3, recompile=False, order_kwargs={}, on_error="raise", max_resident_pages=0,
               max_batch_memory=0, trace=None, custom_field_mapper=None):
    """FFCV 1.0's Loader signature, then ffcv_go's arguments."""


def _ffcv_ssl_form(path, batch_size, order, num_workers=-1, os_cache=DEFAULT_OS_CACHE, distributed=False,
                   seed=None, indices=None, pipelines={}, custom_fields={}, drop_last=True, batches_ahead=3,
                   recompile=False, custom_field_mapper=None, order_kwargs={}, on_error="raise",
                   max_resident_pages=0, max_batch_memory=0, trace=None):
    """FFCV-SSL's Loader signature, then ffcv_go's arguments."""


# help(), inspect.signature and IDEs show FFCV 1.0's form; FFCV-SSL's is in
# the docstring (one signature per callable).
Loader.__signature__ = inspect.signature(_ffcv_form)


def _is_order(value):
    return isinstance(value, OrderOption) or (isinstance(value, type) and issubclass(value, TraversalOrder))


def _bind_loader_args(args, kwargs):
    """Loader's arguments by name, bound to FFCV-SSL's form when path= is
    given or the third positional argument is an order, else to FFCV 1.0's."""
    if "fname" in kwargs and "path" in kwargs:
        raise TypeError("Loader: give the dataset as fname= (FFCV 1.0) or path= (FFCV-SSL), not both")
    ssl = "path" in kwargs or (len(args) >= 3 and _is_order(args[2]))
    form = _ffcv_ssl_form if ssl else _ffcv_form
    try:
        bound = inspect.signature(form).bind(*args, **kwargs)
    except TypeError as e:
        which = "FFCV-SSL's Loader(path, batch_size, order, ...)" if ssl else \
            "FFCV 1.0's Loader(fname, batch_size, num_workers=-1, ...)"
        raise TypeError(f"Loader: {e}, in {which}") from None
    bound.apply_defaults()
    a = dict(bound.arguments)
    if ssl:
        a["fname"] = a.pop("path")
    return a


def _view_key(name):
    """The randomness key base of view `name`: FNV-1a of its name in the high
    32 bits of every operation's key, so a view draws the same whatever the
    other views are, and differently from them."""
    h = 0x811C9DC5
    for b in name.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return ((h & 0x7FFFFFFF) | 1) << 32  # a positive int64


def _wrap_modules(ops):
    """The pipeline's operations, with torch modules run by ModuleWrapper."""
    return [ModuleWrapper(op) if isinstance(op, torch.nn.Module) else op for op in ops]


_live_loaders = weakref.WeakSet()


@atexit.register
def _close_at_exit(timeout=1.0):
    """Closes every loader, then gives the threads that iterated one a moment
    to leave: a daemon thread still freeing batch tensors once the interpreter
    finalizes is stopped inside torch's tensor destructor, which aborts the
    process ("terminate called without an active exception")."""
    import threading
    import time
    for loader in list(_live_loaders):
        loader.close()
    deadline = time.monotonic() + timeout
    for t in list(iterating_threads):
        if t is not threading.current_thread():
            t.join(max(0.0, deadline - time.monotonic()))


_BUCKETING_KEYS = {"duration_field", "max_duration", "num_buckets"}


def _bucketing_args(kwargs, reader):
    """OrderOption.BUCKETED's order_kwargs, checked: duration_field (an
    IntField or FloatField of the file: seconds, frames, tokens, ...; or an
    AudioField: its clips' seconds), max_duration (a batch's total, in that
    field's unit) and num_buckets
    (10 by default, as lhotse's). The loader's batch_size bounds a batch's
    samples. A sample longer than max_duration is refused when the Loader
    is made (by the Go side, naming it)."""
    unknown = set(kwargs) - _BUCKETING_KEYS
    if unknown:
        raise ValueError(f"order BUCKETED: unknown order_kwargs {sorted(unknown)}; it takes "
                         f"{sorted(_BUCKETING_KEYS)}")
    name = kwargs.get("duration_field")
    if not isinstance(name, str):
        raise ValueError(f"order BUCKETED needs order_kwargs['duration_field'], the name of an IntField or FloatField "
                         f"holding each sample's duration, or of an AudioField (fields: {', '.join(reader.field_names)})")
    md = kwargs.get("max_duration")
    if isinstance(md, bool) or not isinstance(md, (int, float, np.integer, np.floating)) or not 0 < md < float("inf"):
        raise ValueError(f"order BUCKETED: order_kwargs['max_duration'] {md!r} must be a positive number, a batch's "
                         f"total duration in the unit of field {name!r}")
    nb = kwargs.get("num_buckets", 10)
    if isinstance(nb, bool) or not isinstance(nb, (int, np.integer)) or nb < 1:
        raise ValueError(f"order BUCKETED: order_kwargs['num_buckets'] {nb!r} must be a positive integer")
    return {"duration_field": name, "max_duration": float(md), "num_buckets": int(nb)}


def _check_devices(outputs):
    """A ToDevice to a device this process cannot use is refused here, when
    the loader is built, not at the first batch."""
    from ..transforms.ops import ToDevice, _check_device
    for _, name, ops, _ in outputs:
        for op in ops or ():
            if isinstance(op, ToDevice):
                try:
                    _check_device(op.device)
                except ValueError as e:
                    raise ValueError(f'output "{name}": ToDevice: {e}') from None
