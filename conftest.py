"""Repo-level pytest setup: the project's own tests run real pytest sessions through pytester."""

pytest_plugins = ["pytester"]
