from ._builtin import QuasiRandom  # noqa: F401
