"""One error hierarchy for pytest-sommelier.

Every error carries a stable ``code`` (documented in docs/errors.md), a one-line ``message``
and a ``hint`` saying how to fix it. The class says whose fault it is, and so the exit status
of the ``sommelier`` command: input 2, environment 3, evaluation 4, invariant 5. Inside a pytest
run, pytest's own exit statuses are kept and the code and hint go into the message.

Invariant kept: ``str(error)`` is a single line of the form ``CODE: message (hint: ...)``, and
input errors name the file, line, key or field in the message (via ``where``).
"""

from __future__ import annotations


class SommelierError(Exception):
    """Base class: a stable code, a one-line message, a hint and an exit meaning."""

    exit_code: int = 1
    kind: str = "error"

    def __init__(self, code: str, message: str, hint: str = "", *, where: str | None = None):
        self.code = code
        self.message = " ".join(message.split())
        self.hint = " ".join(hint.split())
        self.where = where
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"{self.code}: "
        if self.where:
            text += f"{self.where}: "
        text += self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class InputError(SommelierError):
    """The user's input (suite file, split, stored run, option) is wrong. Exit status 2."""

    exit_code = 2
    kind = "input"


class SommelierEnvironmentError(SommelierError):
    """The environment cannot do what was asked (missing package, model file, device). Exit 3."""

    exit_code = 3
    kind = "environment"


class EvaluationError(SommelierError):
    """The evaluation itself failed (model raised, bad decoding, comparison refused). Exit 4."""

    exit_code = 4
    kind = "evaluation"


class InvariantError(SommelierError):
    """An invariant of the method was violated (prompt digest mismatch, count mismatch). Exit 5."""

    exit_code = 5
    kind = "invariant"


EXTENSION_ERRORS: tuple[type[BaseException], ...] = (Exception, SystemExit)
"""What every call into extension code (a scorer, an importer, an engine, a hook, an entry
point's import) catches to make its one line: any ``Exception`` and ``SystemExit``. A
``sys.exit()`` inside a scorer is the scorer's bug, never the process's exit status (``exit 0``
with no verdict would read as a CI pass). ``KeyboardInterrupt`` passes on: the user's
interrupt still interrupts (pytest then reports it, exit 2)."""


def exception_text(exc: BaseException, limit: int = 200) -> str:
    """``"TypeName: first line of its message"`` (``"TypeName"`` when it has none), for any
    exception, to put in a one-line error: the one way an exception becomes text here.

    Invariants kept: it never raises (an ``__str__`` that raises or returns no string gives a
    fallback naming that); the result is one line (the message's first non-blank line,
    stripped) of at most ``limit`` characters of message; it is printable UTF-8 (a lone
    surrogate is written as a ``\\udxxx`` escape).
    """
    name = type(exc).__name__
    try:
        text = str(exc)
    except Exception as inner:  # a user's exception class whose __str__ raises
        return f"{name} (its message could not be read: __str__ raised {type(inner).__name__})"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first) > limit:
        first = first[: max(limit - 3, 0)] + "..."
    first = first.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"{name}: {first}" if first else name

