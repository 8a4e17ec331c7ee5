"""The package version, apart from ``__init__`` so that any module can read it without an import cycle."""

__version__ = "0.1.0"
