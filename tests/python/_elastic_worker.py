"""Worker of the elastic-resume test in test_elastic.py: one rank of a real
torch.distributed (gloo) group, started per rank by torch.multiprocessing."""
import datetime
import json

import numpy as np

ORDERS = ("SEQUENTIAL", "RANDOM", "QUASI_RANDOM")
EPOCH = 1  # the saved state is in the middle of this epoch


def _ids(batches):
    return np.concatenate([b[0].numpy().reshape(-1) for b in batches]) if batches else np.zeros(0, np.int64)


def run(rank, world, init_file, path, indices_file, out_dir, phase, batch_size, save_after, seed):
    """phase "save": take save_after batches of epoch EPOCH and write the
    state (rank 0) and every rank's ids; phase "resume": load that state at
    this world size, take the rest of the epoch and the next one."""
    import torch
    import torch.distributed as dist
    from ffcv_go import Loader
    from ffcv_go.loader import OrderOption

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        indices = np.load(indices_file)
        out = {}
        for name in ORDERS:
            for drop in (False, True):
                key = f"{name}_{int(drop)}"

                def make():
                    return Loader(path, batch_size=batch_size, num_workers=1, order=OrderOption[name],
                                  distributed=True, seed=seed, indices=indices, drop_last=drop,
                                  pipelines={"blob": None})
                loader = make()
                assert (loader.rank, loader.world_size) == (rank, world)
                if phase == "save":
                    loader.load_state_dict({"epoch": EPOCH, "batch": 0, "seed": seed})
                    it = iter(loader)
                    out[f"{key}_taken"] = _ids([next(it) for _ in range(save_after)])
                    state = loader.state_dict()
                    states = [None] * world
                    dist.all_gather_object(states, state)  # synchronous training: all ranks agree
                    out[f"{key}_agree"] = np.array(all(s == states[0] for s in states))
                    if rank == 0:
                        with open(f"{out_dir}/state_{key}.json", "w") as f:
                            json.dump(state, f)
                else:
                    with open(f"{out_dir}/state_{key}.json") as f:
                        loader.load_state_dict(json.load(f))
                    it = iter(loader)
                    expect = len(it)
                    rest = list(it)
                    out[f"{key}_rest"] = _ids(rest)
                    counts = [None] * world
                    dist.all_gather_object(counts, (len(rest), expect, [len(b[0]) for b in rest]))
                    out[f"{key}_batches"] = np.array([c[0] for c in counts])
                    out[f"{key}_len_ok"] = np.array(all(c[0] == c[1] for c in counts))
                    out[f"{key}_sizes"] = np.array([s for c in counts for s in c[2]])
                    # The next epoch is a normal one at this world size.
                    fresh = make()
                    fresh.load_state_dict({"epoch": EPOCH + 1, "batch": 0, "seed": seed})
                    nxt, want = _ids(list(loader)), _ids(list(fresh))
                    out[f"{key}_next"] = nxt
                    out[f"{key}_next_ok"] = np.array(np.array_equal(nxt, want))
        np.savez(f"{out_dir}/{phase}{world}_rank{rank}.npz", **out)
    finally:
        # No destroy_process_group(): with gloo it can hang when the peer has
        # already torn its group down; process exit cleans up.
        dist.barrier()
