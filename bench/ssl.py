"""The self-supervised and policy augmentation benchmark: see ssl_stacks.py.

    PYTHONPATH=python .venv/bin/python bench/ssl.py --data bench/data/imagenet-like --num-images 2000

This file has the standard library's name, and bench/ is first on the path of
every script here: an `import ssl` (asyncio, urllib, torch) that lands on it
gets the real module in its place.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE] + [HERE]
    from ssl_stacks import main
    main()
else:
    import importlib.machinery
    import importlib.util

    _spec = importlib.machinery.PathFinder.find_spec("ssl", [p for p in sys.path if os.path.abspath(p or ".") != HERE])
    _real = importlib.util.module_from_spec(_spec)
    sys.modules["ssl"] = _real  # the import statement hands back what sys.modules holds
    _spec.loader.exec_module(_real)
