"""Sample orders (FFCV's ffcv.traversal_order)."""
from .base import TraversalOrder
from ._builtin import Sequential, SequentialContiguous, Random, QuasiRandom, Bucketed, Rect

__all__ = ["TraversalOrder", "Sequential", "SequentialContiguous", "Random", "QuasiRandom", "Bucketed", "Rect"]
