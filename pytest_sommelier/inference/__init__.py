"""Engines: the generator protocol, model and tokenizer references, the transformers + peft engine,
the model and generation caches. Imports ``data`` and ``core``; never pytest.
"""
