"""The Loader (FFCV's ffcv.loader), and Mixture / Source for several datasets by weight."""
from .loader import Loader, OrderOption, ORDER_TYPE, ORDER_MAP
from .mixture import Mixture, Source

__all__ = ["Loader", "OrderOption", "ORDER_TYPE", "ORDER_MAP", "Mixture", "Source"]
