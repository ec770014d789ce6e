#!/usr/bin/env python3
"""Whether these GPU checks can run here. As a script: exit 0 when CUDA is
usable, else print why (one line) and exit 1; run.sh, `make test-gpu` and
conftest.py share the message."""
import sys


def reason():
    """None when torch sees a CUDA device, else a one-line reason."""
    try:
        import torch
    except ImportError as e:
        return f"no CUDA: torch is not importable ({e})"
    if torch.version.cuda is None:
        return f"no CUDA: torch {torch.__version__} is a CPU-only build"
    if not torch.cuda.is_available():
        return f"no CUDA device: torch {torch.__version__} (CUDA {torch.version.cuda}) sees none"
    return None


def main():
    why = reason()
    if why is not None:
        print(why)
        return 1
    import torch
    names = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    print(f"CUDA {torch.version.cuda}, torch {torch.__version__}: {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
