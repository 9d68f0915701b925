"""The ``sommelier`` subcommands: one module each, with its parser and ``run``."""
