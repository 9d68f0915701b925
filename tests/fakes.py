"""The one fake model of the project's pytester sessions, and the small load/write recorders.

``FAKE_CONFTEST`` is the source of a ``conftest.py`` that overrides ``sommelier_model`` with a
scripted fake. Every pytester suite writes this one source (``plugin_helpers.write_scripted_suite``
does); what a test needs of the model is said in the suite folder's ``script.json``, never by
another fake:

- ``"<arm>": {"<example id>": "<output>"}``: the arm's answers; an unlisted example answers
  ``"__default__"[arm]`` if given, else the split's own target for an id in ``"__hits__"``,
  else ``"__prose__"`` (default: a sentence with no call in it).
- ``"__special__": {"<arm>": kind}``: a misbehaving arm: ``raise`` (an out-of-memory error),
  ``short`` (one output too few), ``nonstr`` (``None`` for every output), ``hang`` (20 s),
  ``batchdep`` / ``batchflip`` (a batched call answers differently from a call alone).
- ``"__fault__": {"arm", "kind", "example"}``: an injected fault: ``load-raise``,
  ``set-identity`` (an identity that is not JSON), a wrong return (``none-items``, ``bytes``,
  ``ints``, ``dicts``, ``one-str``, ``iterator``, ``one-extra``, ``none``, ``surrogate``), or,
  when ``example`` (default: the call's first) is in the call, ``exit`` (the process dies),
  ``interrupt``, ``sysexit``, ``raise``, ``hang`` (60 s).
- ``"__hostile__": {"<arm>": kind, "identity": "engine"}``: ``no-adapter-identity``,
  ``adapter-identity`` (a stray one), ``edit-split`` (rewrites the split's first target during
  the run), ``unprintable`` (an exception whose ``str`` raises); ``identity = "engine"`` gives
  adapter arms an engine-shaped adapter identity.
- ``"__completions__": {"<arm>": {"<example id>": [text, finish_reason, tokens]}}``: the arm's
  generator has ``generate_completions`` (preferred by the runner over ``generate``); an unlisted
  example completes ``["not json at all", "stop", 5]``.
- ``"__model_identity__"``: the model identity (default ``{"fake": "model-1"}``).

Every call appends ``{"arm", "n", "ids", "pid", "warmup"}`` to ``calls.jsonl`` beside the
conftest (``warmup``: the generator's first call, the runner's warm-up), so tests check batching,
exactly-once generation and which process generated. The split is read when the model is first
called (once per process) and a split that cannot be read maps every prompt to ``"?"``: a test
that damages the split meets the plugin's error for it, not the fake's.
"""

from __future__ import annotations

FAKE_CONFTEST = """
import json
import os
import pathlib
import time

import pytest

HERE = pathlib.Path(__file__).parent
SCRIPT = json.loads((HERE / "script.json").read_text())
SPLIT = HERE / "data" / "test.jsonl"
PROSE = SCRIPT.get("__prose__", "I think you should check the weather.")
FAULT = SCRIPT.get("__fault__", {})
HOSTILE = SCRIPT.get("__hostile__", {})
SPECIAL = SCRIPT.get("__special__", {})
COMPLETIONS = SCRIPT.get("__completions__", {})
HITS = set(SCRIPT.get("__hits__", []))

RETURNS = {
    "none-items": lambda prompts: [None for _ in prompts],
    "bytes": lambda prompts: [b"{}" for _ in prompts],
    "ints": lambda prompts: [7 for _ in prompts],
    "dicts": lambda prompts: [{"name": "x", "arguments": {}} for _ in prompts],
    "one-str": lambda prompts: "x" * len(prompts),
    "iterator": lambda prompts: iter(["x"] * len(prompts)),
    "one-extra": lambda prompts: ["x"] * (len(prompts) + 1),
    "none": lambda prompts: None,
    "surrogate": lambda prompts: ["\\ud800 {}" for _ in prompts],
}


ROWS = []


def split_rows():
    # the split's rows, read once, at the first call (a split that cannot be read: none)
    if not ROWS:
        try:
            ROWS.extend([json.loads(line) for line in SPLIT.read_text().splitlines()])
        except (OSError, ValueError):
            pass
    return ROWS


class Unprintable(ValueError):
    def __str__(self):
        raise ValueError("__str__ of this exception raises")


class Fake:
    def __init__(self, arm, suite=None):
        self.fault = FAULT.get("kind") if FAULT.get("arm") == arm else None
        if self.fault == "load-raise":
            raise OSError("weights vanished (scripted)")
        self.arm = arm
        self.kind = HOSTILE.get(arm)
        self.special = SPECIAL.get(arm)
        self.warmed = False
        self.model_identity = SCRIPT.get("__model_identity__", {"fake": "model-1"})
        if self.fault == "set-identity":
            self.model_identity = {"fake": {"not", "json"}}
        # an adapter identity exactly for an arm the suite configures with an adapter
        adapter = suite.arms[arm].adapter if suite is not None else arm != "base"
        self.adapter_identity = {"fake-adapter": arm} if adapter else None
        if self.kind == "no-adapter-identity":
            self.adapter_identity = None
        if self.kind == "adapter-identity":
            self.adapter_identity = {"fake-adapter": "stray"}
        if adapter and HOSTILE.get("identity") == "engine":  # as engines.adapter_refs
            self.adapter_identity = {"name": arm, "sha256": "a" * 64}

    def ids(self, prompts):
        rows = split_rows()
        by_prompt = {row.get("prompt_text"): row.get("example_id") for row in rows}
        self.targets = {row.get("example_id"): row.get("target_text") for row in rows}
        ids = [by_prompt.get(p, "?") for p in prompts]
        with (HERE / "calls.jsonl").open("a") as log:
            log.write(json.dumps({"arm": self.arm, "n": len(prompts), "ids": ids,
                                  "pid": os.getpid(), "warmup": not self.warmed}) + "\\n")
        self.warmed = True
        return ids

    def generate(self, prompts, decoding):
        ids = self.ids(prompts)
        if self.fault in RETURNS:
            return RETURNS[self.fault](prompts)
        if self.fault is not None and FAULT.get("example", ids[0]) in ids:
            if self.fault == "exit":
                os._exit(1)
            if self.fault == "interrupt":
                raise KeyboardInterrupt
            if self.fault == "sysexit":
                raise SystemExit(3)
            if self.fault == "raise":
                raise ValueError("scripted model failure")
            if self.fault == "hang":
                time.sleep(60)
        if self.special == "raise":
            raise RuntimeError("CUDA out of memory (scripted)")
        if self.special == "short":
            return ["x"] * (len(prompts) - 1)
        if self.special == "nonstr":
            return [None for _ in prompts]
        if self.special == "hang":
            time.sleep(20)
        if self.kind == "edit-split" and not (HERE / "edited").exists():
            (HERE / "edited").write_text("")
            lines = SPLIT.read_text().splitlines()
            row = json.loads(lines[0])
            row["target_text"] = json.dumps([{"name": "edited", "arguments": {}}])
            lines[0] = json.dumps(row)
            SPLIT.write_text("\\n".join(lines) + "\\n")
        if self.kind == "unprintable":
            raise Unprintable()
        answers = SCRIPT.get(self.arm, {})
        default = SCRIPT.get("__default__", {}).get(self.arm)
        outputs = [
            answers[i] if i in answers
            else default if default is not None
            else self.targets.get(i) if i in HITS
            else PROSE
            for i in ids
        ]
        if self.special == "batchdep" and len(prompts) > 1:
            outputs = [o + " (batched)" for o in outputs]
        if self.special == "batchflip" and len(prompts) > 1:  # batched: prose; alone: the answer
            outputs = [PROSE for o in outputs]
        return outputs


class Completing(Fake):
    def generate(self, prompts, decoding):
        raise AssertionError("generate_completions is preferred")

    def generate_completions(self, prompts, decoding):
        from pytest_sommelier.core.types import Completion

        script = COMPLETIONS[self.arm]
        unlisted = ["not json at all", "stop", 5]
        return [Completion(*script.get(i, unlisted)) for i in self.ids(prompts)]


def make(arm, suite=None):
    return (Completing if arm in COMPLETIONS else Fake)(arm, suite)


@pytest.fixture(scope="session")
def sommelier_model():
    return make
"""

# A conftest beside a real-model suite: every load of the transformers engine appends a line to
# ``loads.txt`` (a fully cached or refused run must load nothing).
LOAD_RECORDER_CONFTEST = """
import pathlib

from pytest_sommelier.inference import transformers_engine

_original = transformers_engine._load_model_and_tokenizer


def _recording(*args, **kwargs):
    with open(pathlib.Path(__file__).parent / "loads.txt", "a") as log:
        log.write("loaded\\n")
    return _original(*args, **kwargs)


transformers_engine._load_model_and_tokenizer = _recording
"""

# A conftest beside a real-model suite that fails any model load (a fully cached rerun).
NO_LOAD_CONFTEST = (
    "from pytest_sommelier.inference import transformers_engine\n"
    "def _refuse(*args, **kwargs):\n"
    "    raise AssertionError('a fully cached rerun must not load a model')\n"
    "transformers_engine.load_base = _refuse\n"
    "transformers_engine._load_model_and_tokenizer = _refuse\n"
)
