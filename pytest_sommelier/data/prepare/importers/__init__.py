"""Importers of the training-data formats people keep tool-calling data in (``sommelier import
openai-chat|xlam|hermes``), and the pieces every importer shares (``sommelier import bfcl``
included): see ``driver`` and ``common``."""
