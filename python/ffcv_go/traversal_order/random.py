from ._builtin import Random  # noqa: F401
