"""The package version: the one place it is written (pyproject.toml reads it through setuptools)."""

__version__ = "0.1.0"
