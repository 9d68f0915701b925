"""A closed standard output (``sommelier history | head -3``) ends a command quietly: exit
141 (128 + SIGPIPE, as ``git log | head`` gives), no ``BrokenPipeError`` traceback (row R53 of
docs/hardening.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sommelier import cli
from pytest_sommelier.commands import history


def test_a_broken_pipe_in_any_command_is_status_141(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def closed(args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(history, "run", closed)
    assert cli.main(["history"]) == cli.BROKEN_PIPE_STATUS == 141
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_a_reader_that_goes_away_leaves_no_traceback(tmp_path: Path) -> None:
    """A real pipe whose reader has closed: the command's first write fails (EPIPE)."""
    rows = tmp_path / "chat.jsonl"
    call = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
    row = {
        "messages": [{"role": "user", "content": "hi"},
                     {"role": "assistant", "tool_calls": [call]}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
    }  # fmt: skip
    rows.write_text(json.dumps(row) + "\n")
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from pytest_sommelier.cli import main; "
             "sys.exit(main())", "import", "openai-chat", str(rows), "--out",
             str(tmp_path / "out.jsonl")],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=120,
        )  # fmt: skip
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
    assert "Exception ignored" not in done.stderr


def test_a_command_builds_the_parser_of_its_own_subcommand_alone() -> None:
    """``build_parser(argv)`` registers only the subcommand argv names: its parser is the one
    the full parser hands the words to (the same help and usage), and any other first word
    (none, ``-h``, a module's name that is not a command word, a typo) gets every one."""
    import argparse

    full = cli.build_parser()
    choices = next(
        a for a in full._actions if isinstance(a, argparse._SubParsersAction)
    ).choices
    assert len(choices) == len(cli.COMMANDS)
    for word, subparser in choices.items():
        alone = cli.build_parser([word, "--help"])
        own = next(a for a in alone._actions if isinstance(a, argparse._SubParsersAction))
        assert list(own.choices) == [word]
        assert own.choices[word].format_help() == subparser.format_help()
        assert alone.format_usage() == full.format_usage()
    for words in ([], ["-h"], ["imports"], ["histry"], ["--", "history"]):
        every = next(
            a for a in cli.build_parser(words)._actions
            if isinstance(a, argparse._SubParsersAction)
        )
        assert list(every.choices) == list(choices)


def test_usage_errors_and_help_read_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    for words in (["histry"], [], ["history", "--no-such"], ["import"], ["plan", "-h"]):
        expected_status = _exit_status(words)
        expected = capsys.readouterr()
        assert cli.main(words) == expected_status
        assert capsys.readouterr() == expected


def _exit_status(words: list[str]) -> int:
    """The exit status of the full parser's ``parse_args(words)`` (argparse exits on usage
    errors and help)."""
    try:
        cli.build_parser().parse_args(words)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    raise AssertionError(words)
