"""The Loader (FFCV's ffcv.loader)."""
from .loader import Loader, OrderOption, ORDER_TYPE, ORDER_MAP

__all__ = ["Loader", "OrderOption", "ORDER_TYPE", "ORDER_MAP"]
