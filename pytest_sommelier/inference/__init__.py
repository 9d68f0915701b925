"""Engines: the generator protocol, the base every engine shares (``engines``) and the registry
that chooses one (``select_engine``), the transformers, vllm and openai engines, model and
tokenizer references, the model and generation caches, parity. Imports ``data`` and ``core``;
never pytest.
"""
