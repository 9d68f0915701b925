"""sommelier-semantic: the reference pytest-sommelier extension (a scorer and an importer)."""

__version__ = "0.1.0"
