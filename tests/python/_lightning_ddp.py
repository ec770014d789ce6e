"""A Lightning run for the elastic-resume test in test_integrations.py: module-level,
so that DDP's worker processes (started by forkserver) can unpickle it."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    import lightning.pytorch as pl
except ImportError:  # the standalone package
    import pytorch_lightning as pl


class IdRecorder(pl.LightningModule):
    """Trains a tiny net and writes, per rank, the sample ids of every step
    (column 0: the global step, column 1: the id) to out_dir."""

    def __init__(self, out_dir, num_classes):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                 nn.Linear(8, num_classes))
        self.out_dir, self.rows = out_dir, []

    def training_step(self, batch, batch_idx):
        image, label, index = batch
        self.rows += [(self.global_step, int(i)) for i in index]
        return F.cross_entropy(self.net(image), label)

    def on_train_end(self):
        np.save(f"{self.out_dir}/ids_world{self.trainer.world_size}_rank{self.global_rank}.npy",
                np.array(self.rows, dtype=np.int64).reshape(-1, 2))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)
