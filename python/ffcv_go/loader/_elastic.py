"""Elastic resume of a Loader: where a run is within an epoch, and how the
rest of that epoch is shared out again (core/order/elastic.go does the work).

A state saved at the loader's own world size, batch size and drop_last
resumes exactly at the saved batch. Otherwise, for the built-in orders, the
epoch's global order is rebuilt from the seed and checked against the
state's fingerprint, and the samples the saving run had not taken are split
over the new ranks: each of them once, none repeated, every rank the same
number of batches. Later epochs are normal epochs at the new world size.
"""
from .. import _lib
from ..traversal_order import Random


class Resume:
    """A loader's resume state. It holds no reference to its loader (each
    method is given it), so it puts the loader in no reference cycle."""

    def __init__(self):
        self.rest = None  # a loaded state's rest of an epoch, at this world size
        self._described = None  # ((epoch, order, window), its description)

    def take(self, epoch):
        """The rest of epoch a loaded state left (None if there is none), once."""
        rest, self.rest = self.rest, None
        return rest if rest is not None and rest["epoch"] == epoch else None

    def peek(self, epoch):
        return self.rest if self.rest is not None and self.rest["epoch"] == epoch else None

    def state_dict(self, loader):
        """See Loader.state_dict."""
        it = loader._current() if loader._current is not None else None
        if it is not None and not it.finished:
            epoch, batch, rest, length = it.epoch, it.batch, it.elastic, len(it) + it.batch
        else:
            epoch, batch = loader.next_epoch, loader._resume_batch
            rest = self.peek(epoch)
            length = loader._batches_in(epoch) if rest is None else rest["length"]
        if batch >= length:  # after an epoch's last batch: the next epoch, not an empty one
            epoch, batch, rest = epoch + 1, 0, None
        state = {"epoch": epoch, "batch": batch, "seed": loader.seed, "world": loader.world_size,
                 "batch_size": loader.batch_size}
        if loader.mixture is not None:
            state["mixture"] = mixture_key(loader)
        kind = order_kind(loader)
        if rest is not None:
            stage = dict(_stage(loader, 0), layout="rest", batches=batch)
            state["elastic"] = {"samples": loader._num_indices(), "order": rest["order"],
                                "window": rest["window"], "fingerprint": rest["fingerprint"],
                                "stages": rest["stages"] + [stage]}
        elif kind is not None:
            info = self._describe(loader, epoch, kind, 0) if batch else {"window": 0, "fingerprint": None}
            state["elastic"] = {"samples": loader._num_indices(), "order": kind, "window": info["window"],
                                "fingerprint": info["fingerprint"], "stages": [_stage(loader, batch)]}
        return state

    def load_state_dict(self, loader, state):
        """See Loader.load_state_dict."""
        if int(state.get("seed", loader.seed)) != loader.seed:
            raise ValueError(f"state was saved with seed {state['seed']}, this loader has seed {loader.seed}")
        _check_mixture(loader, state)
        epoch, batch = int(state["epoch"]), int(state["batch"])
        self.rest = None
        loader._current = None
        elastic = state.get("elastic")
        if elastic is not None and any(int(st["batches"]) for st in elastic["stages"]):
            if self._resumes_exactly(loader, epoch, elastic):
                self._check_fingerprint(loader, epoch, elastic, self._describe(loader, epoch, elastic["order"], 0))
            else:
                self._load_rest(loader, epoch, elastic)
                return
        elif elastic is None and batch and "world" in state and \
                (int(state["world"]), int(state.get("batch_size", loader.batch_size))) != \
                (loader.world_size, loader.batch_size):
            raise ValueError(f"state was saved mid-epoch at world size {state['world']}, batch size "
                             f"{state.get('batch_size')} with a custom order; it resumes only at the same sizes "
                             f"(this loader: {loader.world_size}, {loader.batch_size})")
        loader.next_epoch, loader._resume_batch = epoch, batch
        if loader._resume_batch >= loader._batches_in(epoch):
            loader.next_epoch, loader._resume_batch = loader.next_epoch + 1, 0

    def _resumes_exactly(self, loader, epoch, elastic):
        """Whether a state continues as this loader's own epoch would: one
        stage, taken with this loader's order, sizes and drop_last."""
        stages = elastic["stages"]
        if len(stages) != 1 or elastic["order"] != order_kind(loader):
            return False
        if dict(stages[0], batches=0) != _stage(loader, 0):
            return False
        # QUASI_RANDOM's window (2 x batch size by default) is part of its order.
        return elastic["order"] != "quasi_random" or \
            int(elastic["window"]) == self._describe(loader, epoch, elastic["order"], 0)["window"]

    def _describe(self, loader, epoch, kind, window):
        key = (epoch, kind, window)
        if self._described is None or self._described[0] != key:
            self._described = (key, _call(loader, epoch, kind, window, [])[1])
        return self._described[1]

    @staticmethod
    def _check_fingerprint(loader, epoch, elastic, info):
        if info["fingerprint"] != elastic["fingerprint"]:
            raise ValueError(f"state does not match this loader: epoch {epoch}'s {elastic['order']} order over "
                             f"{info['samples']} samples with seed {loader.seed} is not the order the state was "
                             f"saved with (another dataset, indices or order?)")

    def _load_rest(self, loader, epoch, elastic):
        if order_kind(loader) is None:
            raise ValueError("elastic resume (another world size, batch size or drop_last than the saving run) "
                             "needs a built-in order; this loader has a custom TraversalOrder")
        if "bucketed" in (elastic["order"], order_kind(loader)) and elastic["order"] != order_kind(loader):
            raise ValueError(f"state was saved mid-epoch with order {elastic['order']}, this loader's is "
                             f"{order_kind(loader)}: a bucketed epoch is made of whole batches of its own, "
                             f"so it resumes only a bucketed state (or start at an epoch's beginning)")
        if int(elastic["samples"]) != loader._num_indices():
            raise ValueError(f"state was saved for {elastic['samples']} samples, this loader has "
                             f"{loader._num_indices()} (another dataset or indices?)")
        stages = [dict(st) for st in elastic["stages"]]
        try:
            ids, info = _call(loader, epoch, elastic["order"], elastic["window"], stages)
        except ValueError as e:
            raise ValueError(f"state does not fit this loader's epoch {epoch}: {e}") from None
        self._check_fingerprint(loader, epoch, elastic, info)
        bs = loader.batch_size
        length = info["length"]
        if elastic["order"] == "bucketed":  # whole batches: with drop_last, as many on every rank
            left = length > 0 if loader.drop_last else info["remaining"] > 0
        else:
            left = info["remaining"] >= (loader.world_size * bs if loader.drop_last else 1)
        if not left:  # nothing of the epoch left for any rank: go on with the next one
            loader.next_epoch, loader._resume_batch = epoch + 1, 0
            return
        self.rest = {"epoch": epoch, "order": elastic["order"], "window": elastic["window"],
                     "fingerprint": elastic["fingerprint"], "stages": stages, "ids": ids, "length": length}
        loader.next_epoch, loader._resume_batch = epoch, 0


def mixture_key(loader):
    """What identifies a Mixture's epochs in a state: per source its name,
    samples and samples per epoch."""
    return [[s["name"], s["samples"], s["take"]] for s in loader.reader.sources]


def _check_mixture(loader, state):
    """Refuses a state saved by a loader of another mixture (or of one
    dataset for a mixture's loader, and the reverse), naming the difference."""
    saved = state.get("mixture")
    if loader.mixture is None:
        if saved is not None:
            raise ValueError(f"state was saved by a loader of a Mixture of {len(saved)} sources; this loader reads "
                             f"one dataset ({loader.fname})")
        return
    if saved is None:
        if "elastic" in state:  # a loader's own state, not a hand-made position
            raise ValueError(f"state was saved by a loader of one dataset; this loader reads {loader.fname}")
        return
    mine = mixture_key(loader)
    if len(saved) != len(mine):
        raise ValueError(f"state was saved by a loader of a Mixture of {len(saved)} sources; this one has "
                         f"{len(mine)}: {loader.fname}")
    for k, (a, b) in enumerate(zip(saved, mine)):
        if list(a) != b:
            raise ValueError(f"state was saved from another mixture: its source {k} was {a[0]!r} with {a[1]} samples, "
                             f"{a[2]} per epoch; this loader's is {b[0]!r} with {b[1]} samples, {b[2]} per epoch")


def order_kind(loader):
    """The name of the loader's global order, None for a custom order.
    Distributed RANDOM draws torch's permutation, one process numpy's (a
    Mixture's, Go's own)."""
    cls = loader._order_cls
    if not hasattr(cls, "_go_name"):
        return None
    if cls is Random and loader.distributed and loader.mixture is None:
        return "random_torch"
    return cls._go_name


def _stage(loader, batches):
    return {"layout": loader._build.layout, "world": loader.world_size, "batch_size": loader.batch_size,
            "drop_last": loader.drop_last, "batches": int(batches)}


def _call(loader, epoch, kind, window, stages):
    """(this rank's ids for the rest of the epoch, info on its global order)."""
    # The global order of distributed RANDOM is torch's permutation, drawn in
    # Python; Go draws the others.
    g = loader.traversal_order._torch_order(epoch) if kind == "random_torch" else None
    spec = {"epoch": int(epoch), "order": "random" if kind == "random_torch" else kind,
            "window": int(window), "stages": stages}
    # A bucketed rank's list may repeat one batch (padding): room for it.
    room = loader._num_indices() + loader.batch_size if stages else 0
    return _lib.loader_elastic(loader._build.handle, spec, g, room, context=loader.fname)
