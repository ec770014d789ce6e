"""The bottleneck doctor: measures where training from a .beton file would
wait on this machine, names the bottleneck and gives the settings that fix it.

    python -m ffcv_go doctor train.beton --model resnet50 --device cuda --amp

or from Python::

    from ffcv_go.doctor import diagnose
    report = diagnose("train.beton", model="resnet18", device="cuda")
    print(report.format())
    report.bottleneck        # "storage", "cpu", "model" or "none"
    report.recommendations   # [Recommendation(setting=..., target=..., why=...)]

What it measures, each phase bounded so that the whole run stays within
``max_seconds``:

- **storage**: the file's pages read from a cold cache (the file dropped from
  the page cache with ``posix_fadvise(POSIX_FADV_DONTNEED)``, unless another
  process has it open: ``evict``), whole pages in random order (what the
  process cache reads) and sample-sized reads at random (what random access
  through the OS cache costs); the same pages read again (warm); the file's
  filesystem, and its size against the memory this process may use
  (``/proc/meminfo`` and its cgroup's limit). For s3:// and http(s):// files,
  the rate the loader's own reader fetches pages at.
- **loader**: images per second, CPU time per image and cores busy for the
  pipeline at 1, 2, 4, ... workers up to the usable cores, on a part of the
  file read into the page cache first, so that these are decoding rates; the
  time to the first batch; where the workers' time goes, by stage (read,
  entropy decode, IDCT and resize, operations) and by operation, from the Go
  side's timers. When the file does not fit in memory, the loader again from
  a cold cache with the given order and cache and with ``QUASI_RANDOM`` and
  the process cache.
- **model** (optional): training steps per second alone, on random inputs
  already on the device; then the loader feeding the model as training
  does, for a bounded time: the share of the time the training loop waited
  in ``next()`` and the share the device was busy.

For a ``Mixture`` (``diagnose(Mixture([...]))``, or a .py file defining
``data``), storage is read source by source, each on its own storage and
for a share of the time by its share of the epoch (``storage["sources"]``);
the worker scan decodes its local sources; the cold runs and the model
read the Mixture itself, with each source's counters of the last epoch
(``"sources"``). The source whose storage allows the slowest epoch at its
share (its rate over its share), among those read from storage every
epoch, is named when it limits, with its fix.

It then names the stage that limits training: with a model, the model when
the training loop waited for data less than ``LOADER_BOUND_WAIT_SHARE`` of
the time, otherwise the loader's limit; storage when cold reads hold the
loader below its decoding rate, else the CPU; "none" when there is nothing to
limit at this scale (an epoch of the whole file takes under a second). It
also gives what a first epoch from a cold cache adds to short schedules.

The package is split by job: ``_probe`` (the machine, the file's place),
``_measure`` (storage and the loader), ``_model`` (the model, alone and fed
by the loader), ``_decide`` (pure rules, named thresholds), ``_report``
(the report, its text, JSON and figure) and ``_diagnose`` (the phases within
the time budget).
"""
from ._decide import LOADER_BOUND_WAIT_SHARE, decide
from ._diagnose import diagnose
from ._measure import drop_from_page_cache
from ._probe import memory_info, usable_cores
from ._report import Recommendation, Report

__all__ = ["diagnose", "Report", "Recommendation", "decide", "memory_info", "usable_cores", "drop_from_page_cache"]
