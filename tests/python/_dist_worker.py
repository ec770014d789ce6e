"""Worker of the real torch.distributed (gloo) test in test_orders.py (one process per rank)."""
import datetime

import numpy as np


def run(rank, world, init_file, path, out_dir, seed):
    import torch
    import torch.distributed as dist
    from ffcv_go import Loader
    from ffcv_go.loader import OrderOption

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        result = {}
        for name, order in (("sequential", OrderOption.SEQUENTIAL), ("random", OrderOption.RANDOM),
                            ("quasi", OrderOption.QUASI_RANDOM)):
            loader = Loader(path, batch_size=4, num_workers=1, order=order, distributed=True, seed=seed,
                            drop_last=False, pipelines={"blob": None})
            assert (loader.rank, loader.world_size) == (rank, world)
            for epoch in range(2):
                got = [b[0].numpy()[:, 0] for b in loader]
                result[f"{name}_{epoch}"] = np.concatenate(got) if got else np.zeros(0, np.int64)
            counts = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
            dist.all_gather(counts, torch.tensor([len(loader)], dtype=torch.int64))
            result[f"{name}_lens"] = np.array([int(c) for c in counts])
        np.savez(f"{out_dir}/rank{rank}.npz", **result)
    finally:
        # No destroy_process_group(): with gloo it can hang when the peer has
        # already torn its group down; process exit cleans up.
        dist.barrier()
