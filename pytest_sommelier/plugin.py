"""pytest-sommelier's pytest entry point: options and hook wiring only."""
