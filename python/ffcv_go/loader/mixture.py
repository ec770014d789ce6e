"""Several datasets by weight in one Loader: ``Loader(Mixture([Source(...), ...]), ...)``.

The semantics (weights, epochs, orders, resume) are the guide's, "Training
on a mixture" (docs/guides/mixtures.md). The Go core opens the sources,
fits their fields together, turns the weights into each source's exact
number of samples per epoch and draws the epochs' orders; this module only
describes a mixture.
"""
import math
import numbers
import os


class Source:
    """One dataset of a :class:`Mixture`, and its weight.

    Args:
        path: what ``Loader`` takes for one dataset: a .beton file, a directory
            or glob of shards, an ``s3://`` or ``http(s)://`` URL, or a list of these.
        proportion: the share of every epoch that comes from this source
            (relative, as MosaicML Streaming's ``Stream(proportion=)``). The
            proportions of a mixture sum to 1; beside sources with ``repeat``,
            ``choose`` or no weight they sum to less than 1, and those sources
            make the rest of the epoch.
        repeat: how many times per epoch the source is read (absolute; 2 reads
            it twice, 0.5 half of it; ``repeat × samples`` rounded down).
        choose: how many of its samples every epoch takes (absolute).
            At most one of ``proportion``, ``repeat`` and ``choose``; none reads
            the source once per epoch. A weight of 0 (``proportion=0``) makes a
            side source: no epoch takes its samples, operations read it by
            name (``AddNoise(noise=..., source=name)``, a noise corpus). It
            is not part of the mixture's samples (sample ids, epochs, resume
            are the other sources'), so its fields need not agree with theirs.
        rename: ``{stored name: name in the mixture}``, to fit this source's
            fields to the others'.
        drop: stored field names this source leaves out.
        pipelines: ``{field: [operations]}``, this source's own pipeline of a
            field (by its name in the mixture), which replaces the
            ``Loader``'s on this source's samples. The rule: only the
            per-sample built-in operations differ (the decoder and the
            transforms that run in Go, e.g. another crop scale or no flip),
            and they must give the same per-sample shape and dtype; what
            follows them (``ToTensor``, ``ToDevice``, Python operations,
            batch operations such as MixUp) is the Loader's pipeline's and
            runs on whole batches: leave it out or write it as there. Not
            for a field with views or followed by targets.
        name: how errors, ``loader.sources``, stats and traces call the source
            (default: its path).
    """

    def __init__(self, path, *, proportion=None, repeat=None, choose=None, rename=None, drop=None, pipelines=None,
                 name=None):
        if isinstance(path, (list, tuple)):
            if not path:
                raise ValueError("Source: an empty list of paths")
            self.paths = [os.fspath(p) for p in path]
        else:
            self.paths = [os.fspath(path)]
        self.name = str(name) if name is not None else ", ".join(self.paths)
        given = [k for k, v in (("proportion", proportion), ("repeat", repeat), ("choose", choose)) if v is not None]
        if len(given) > 1:
            raise ValueError(f"Source {self.name!r}: give at most one of proportion, repeat and choose "
                             f"(got {' and '.join(given)})")
        self.proportion = _positive(proportion, "proportion", self.name, zero=True)
        self.repeat = _positive(repeat, "repeat", self.name, zero=True)
        if choose is not None and (isinstance(choose, bool) or not isinstance(choose, numbers.Integral) or choose < 0):
            raise ValueError(f"Source {self.name!r}: choose {choose!r} must be a positive number of samples "
                             f"(or 0: read by operations only)")
        self.choose = None if choose is None else int(choose)
        self.rename = dict(rename or {})
        for k, v in self.rename.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"Source {self.name!r}: rename maps field names to names, got {k!r}: {v!r}")
        if isinstance(drop, str):
            drop = [drop]
        self.drop = list(drop or [])
        if not all(isinstance(n, str) for n in self.drop):
            raise TypeError(f"Source {self.name!r}: drop lists field names, got {self.drop!r}")
        self.pipelines = dict(pipelines or {})
        for k, v in self.pipelines.items():
            if not isinstance(k, str) or not isinstance(v, (list, tuple)) or not v:
                raise TypeError(f"Source {self.name!r}: pipelines maps field names to lists of operations, "
                                f"got {k!r}: {v!r}")
        if self.pipelines and 0 in (self.proportion, self.repeat, self.choose):
            raise ValueError(f"Source {self.name!r}: pipelines of a source of weight 0, which gives no epoch a "
                             f"sample: operations only read it (AddNoise(source=))")

    def _spec(self):
        return {"name": self.name, "paths": self.paths, "proportion": self.proportion, "repeat": self.repeat,
                "choose": self.choose, "rename": self.rename, "drop": self.drop}

    def __repr__(self):
        weight = next((f", {k}={v!r}" for k, v in (("proportion", self.proportion), ("repeat", self.repeat),
                                                     ("choose", self.choose)) if v is not None), "")
        return f"Source({self.name!r}{weight})"


class Mixture:
    """Datasets read as one by a :class:`~ffcv_go.loader.Loader`, each with its
    weight: ``Loader(Mixture([Source(a, proportion=0.7), Source(b, proportion=0.3)]), ...)``.

    Args:
        sources: the :class:`Source` objects (a path stands for ``Source(path)``).
        weights: litdata's ``CombinedStreamingDataset(weights=)``: relative
            weights, one per source, normalized (not with per-source weights);
            0 makes a side source (see ``Source``).
        epoch_size: samples per epoch over all ranks when the weights are
            relative (default: the sources' samples in all); without weights,
            the sources share it in proportion to their sizes.
        source_field: a name for an added IntField holding each sample's source
            index (0, 1, ...): it then comes out of the Loader as a field does,
            last, with its own pipeline if given one (``pipelines``).

    Every epoch takes an exact number of samples from each source
    (``Loader.sources``). A source is read as an endless stream of passes,
    each freshly shuffled: an epoch takes the next samples of that stream,
    so no sample repeats before the source is exhausted. The sources' fields
    must agree in name and kind (``Source(rename=, drop=)`` fits them);
    sample ids number the sources' samples one source after the other.
    Side sources (weight 0) are left out of both: operations read them by
    name, e.g. ``AddNoise((0, 15), noise="audio", source="musan")``.
    """

    def __init__(self, sources, *, weights=None, epoch_size=None, source_field=None):
        if isinstance(sources, (str, os.PathLike, Source)):
            raise TypeError("Mixture takes a list of sources")
        self.sources = [s if isinstance(s, Source) else Source(s) for s in sources]
        if not self.sources:
            raise ValueError("Mixture: no sources")
        if weights is not None:
            weights = [_positive(w, "weight", s.name, zero=True) for w, s in zip(weights, self.sources)] \
                if len(weights) == len(self.sources) else list(weights)
            if len(weights) != len(self.sources):
                raise ValueError(f"Mixture: {len(weights)} weights for {len(self.sources)} sources")
            weighted = [s.name for s in self.sources if (s.proportion, s.repeat, s.choose) != (None, None, None)]
            if weighted:
                raise ValueError(f"Mixture: weights= and the sources' own weights ({', '.join(weighted)}) "
                                 f"both given: use one or the other")
        self.weights = weights
        if weights is not None:
            for w, src in zip(weights, self.sources):
                if w == 0 and src.pipelines:
                    raise ValueError(f"Source {src.name!r}: pipelines of a source of weight 0, which gives no "
                                     f"epoch a sample: operations only read it (AddNoise(source=))")
        if epoch_size is not None and (isinstance(epoch_size, bool) or not isinstance(epoch_size, numbers.Integral)
                                       or epoch_size < 1):
            raise ValueError(f"Mixture: epoch_size {epoch_size!r} must be a positive number of samples")
        self.epoch_size = None if epoch_size is None else int(epoch_size)
        if source_field is not None and (not isinstance(source_field, str) or not source_field):
            raise ValueError(f"Mixture: source_field {source_field!r} must be a field name")
        self.source_field = source_field

    def _taken(self):
        """The sources an epoch takes samples of (not the side sources of
        weight 0), in order."""
        return [s for k, s in enumerate(self.sources) if not self._is_side(k)]

    def _is_side(self, k):
        s = self.sources[k]
        return 0 in (s.proportion, s.repeat, s.choose) or (self.weights is not None and self.weights[k] == 0)

    def _spec(self):
        return {"sources": [s._spec() for s in self.sources], "weights": self.weights,
                "epoch_size": self.epoch_size or 0, "source_field": self.source_field or ""}

    def _key(self):
        """What identifies the mixture's epochs, for state_dict: the sources'
        names, paths and weights, the epoch size."""
        return [[s.name, s.paths, s.proportion, s.repeat, s.choose] for s in self.sources] + \
            [self.weights, self.epoch_size]

    def __repr__(self):
        return f"Mixture([{', '.join(map(repr, self.sources))}])"


def _positive(x, what, where, zero=False):
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or x < 0 or (x == 0 and not zero):
        raise ValueError(f"Source {where!r}: {what} {x!r} must be a positive number"
                         + (" (or 0: read by operations only)" if zero else ""))
    return float(x)
