"""Training-framework integrations for ffcv_go loaders.

- ``ffcv_go.integrations.composer``: ``to_dataspec(loader)`` (alias
  ``ffcv_dataspec``) makes a MosaicML Composer ``DataSpec``;
  ``build_train_loader`` / ``build_eval_loader`` take rank and world size
  from ``composer.utils.dist``; the ``LoaderState`` callback keeps the
  loader's position in checkpoints (elastic resume).
- ``ffcv_go.integrations.lightning``: ``FFCVDataModule``, a Lightning
  ``LightningDataModule`` whose dataloaders are ffcv_go Loaders sharded by
  the trainer's rank and world size.
- ``ffcv_go.integrations.ultralytics``: ``beton_trainer`` and
  ``beton_validator`` make Ultralytics YOLO's trainers and validators read
  .beton files (``write_data_yaml``); ``to_ultralytics_batch`` turns a
  loader batch into their batch dict. It never imports Ultralytics.

Importing this package imports neither Composer nor Lightning; each
submodule imports its framework when it is itself imported (or when one of
the names below is first used).
"""
from ._common import build_loader, samples_per_rank, LazyEpochLoader

__all__ = ["build_loader", "samples_per_rank", "LazyEpochLoader", "to_dataspec", "ffcv_dataspec", "FFCVDataModule",
           "LoaderState"]

_LAZY = {
    "to_dataspec": "composer",
    "ffcv_dataspec": "composer",
    "build_train_loader": "composer",
    "build_eval_loader": "composer",
    "LoaderState": "composer",
    "FFCVDataModule": "lightning",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
