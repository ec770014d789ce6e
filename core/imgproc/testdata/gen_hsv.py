#!/usr/bin/env python3
"""Prints the SHA-256 digests hsv_test.go holds OpenCV's 8-bit HSV to, run in
a venv with opencv-python-headless and numpy on an x86-64 CPU with AVX2:

    python gen_hsv.py

rgb2hsv: cv2.cvtColor(COLOR_RGB2HSV) of every 24-bit colour (R major), as
4096-pixel rows. hsv2rgb: cv2.cvtColor(COLOR_HSV2RGB) of every (H < 180, S,
V) (H major), as 45-pixel rows: 32 pixels of each row go through OpenCV's
SIMD code, 13 through its scalar code."""
import hashlib

import cv2
import numpy as np

i = np.arange(1 << 24, dtype=np.uint32)
rgb = np.stack([(i >> 16) & 255, (i >> 8) & 255, i & 255], -1).astype(np.uint8).reshape(4096, 4096, 3)
print("opencv", cv2.__version__)
print("rgb2hsv", hashlib.sha256(cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV).tobytes()).hexdigest())
h, s, v = np.meshgrid(np.arange(180), np.arange(256), np.arange(256), indexing="ij")
hsv = np.stack([h, s, v], -1).astype(np.uint8).reshape(-1, 45, 3)
print("hsv2rgb", hashlib.sha256(cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB).tobytes()).hexdigest())
