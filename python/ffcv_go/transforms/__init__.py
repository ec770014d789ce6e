"""Transforms (FFCV's ffcv.transforms)."""
from .ops import ToTensor, ToDevice, ToTorchImage, Convert, View, Squeeze, ModuleWrapper

__all__ = ["ToTensor", "ToDevice", "ToTorchImage", "Convert", "View", "Squeeze", "ModuleWrapper"]
