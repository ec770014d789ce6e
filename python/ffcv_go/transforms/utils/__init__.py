"""Helpers for custom image operations (FFCV's ffcv.transforms.utils)."""
