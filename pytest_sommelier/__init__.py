"""pytest-sommelier: evaluate LoRA tool-calling adapters against their base model in pytest."""

__version__ = "0.1.0"
