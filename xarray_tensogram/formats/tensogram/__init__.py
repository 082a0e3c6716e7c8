"""Tensogram v3 (``.tgm``): reader and writer, no xarray inside."""

from .reader import CorruptMessageWarning, Message, TensogramFile, open_tensogram

__all__ = ["CorruptMessageWarning", "Message", "TensogramFile", "open_tensogram"]
