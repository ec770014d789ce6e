from ._builtin import Sequential  # noqa: F401
