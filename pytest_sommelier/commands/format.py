"""``sommelier format``: render prepared examples into a formatted split with a tokenizer's chat
template; ``format_split`` joins tokenizer loading (inference) to formatting (data)."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any


def format_split(
    prepared: Path | str,
    out: Path | str,
    *,
    tokenizer_ref: str,
    split: str,
    revision: str | None = None,
    policy: str | None = None,
    base_dir: Path | str | None = None,
    tokenizer: Any = None,
    arguments_key: str = "arguments",
    template_kwargs: dict[str, Any] | None = None,
    parser: str = "v1",
) -> list[dict[str, Any]]:
    """Load the tokenizer a reference names (unless given), derive its portable identity, and
    format ``prepared`` into ``out`` (``data.prepare.formatting.format_file``); returns the rows.
    ``parser``: the split's ``[parser] version`` (v2: rows with several gold calls, and the
    default policy ``sommelier.tools-in-system.v2``).

    The identity is always derived from the reference (content digest for local files), so it
    carries no machine path. This is where the inference layer (tokenizer loading) meets the
    data layer (formatting), so that data never imports inference. A hub id without a revision
    is refused before any hub access.
    """
    from pytest_sommelier.data.prepare.formatting import check_parser, default_policy, format_file
    from pytest_sommelier.data.references import require_revision, resolve_local_path
    from pytest_sommelier.inference.modelref import load_tokenizer, tokenizer_identity

    policy = policy or default_policy(parser)
    check_parser(parser, policy)
    if tokenizer is None:
        if resolve_local_path(tokenizer_ref, base_dir=base_dir) is None:
            require_revision(
                tokenizer_ref,
                revision,
                field="--tokenizer",
                revision_field="--revision",
                where="--tokenizer",
                looked="in the working directory" if base_dir is None else f"under {base_dir}",
            )
        tokenizer = load_tokenizer(tokenizer_ref, revision=revision, base_dir=base_dir)
    tokenizer_id, tokenizer_revision = tokenizer_identity(
        tokenizer_ref, revision, tokenizer, base_dir=base_dir
    )
    return format_file(
        prepared,
        out,
        tokenizer=tokenizer,
        tokenizer_id=tokenizer_id,
        tokenizer_revision=tokenizer_revision,
        split=split,
        policy=policy,
        arguments_key=arguments_key,
        template_kwargs=template_kwargs,
        parser=parser,
    )


def template_kwargs_of(given: list[str] | None) -> dict[str, Any]:
    """``--template-kwarg KEY=VALUE`` (repeatable; VALUE is JSON: ``false``, ``3``, ``"x"``,
    ``{"a": 1}``, read by the one strict decoder, ``data.json_input.strict_json``: no repeated
    key inside it) as a dict; one InputError line for a malformed one or a repeated key (the
    names and values are then checked as every template option is,
    ``formatting.check_template_kwargs``)."""
    from pytest_sommelier.data.json_input import strict_json
    from pytest_sommelier.data.prepare.formatting import check_template_kwargs
    from pytest_sommelier.errors import InputError

    options: dict[str, Any] = {}
    for item in given or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise InputError(
                "SOM-FORMAT-TEMPLATE-KWARG",
                f"{item[:60]!r} is not KEY=VALUE",
                "write --template-kwarg enable_thinking=false (VALUE is JSON)",
                where="--template-kwarg",
            )
        try:
            parsed = strict_json(value)
        except ValueError as exc:
            raise InputError(
                "SOM-FORMAT-TEMPLATE-KWARG",
                f"the value of {name[:40]!r} is not JSON ({str(exc)[:80]}): {value[:60]!r}",
                'quote a string as JSON (KEY=\'"text"\'); true, false, numbers, null, arrays '
                "and objects as they are",
                where="--template-kwarg",
            ) from None
        if name in options:
            raise InputError(
                "SOM-FORMAT-TEMPLATE-KWARG",
                f"option {name[:40]!r} is given twice",
                "give each template option once",
                where="--template-kwarg",
            )
        options[name] = parsed
    return check_template_kwargs(options)


def run(args: argparse.Namespace) -> int:
    """``sommelier format``: render prepared examples into a formatted split (atomic write)."""
    from pytest_sommelier.data.store.outputs import check_output

    check_output(args.out, inputs=[args.prepared], where="--out")
    template_kwargs = template_kwargs_of(args.template_kwarg)
    rows = format_split(
        args.prepared,
        args.out,
        tokenizer_ref=args.tokenizer,
        revision=args.revision,
        split=args.split,
        policy=args.policy,
        arguments_key=args.arguments_key,
        template_kwargs=template_kwargs or None,
        parser=args.parser,
    )
    languages = Counter(row["language"] for row in rows)
    summary = ", ".join(f"{language}: {count}" for language, count in languages.items())
    print(f"wrote {len(rows)} formatted rows ({summary}) to {args.out}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier format``."""
    from pytest_sommelier.core.parse import ARGUMENTS_KEYS
    from pytest_sommelier.data.prepare.formatting import (
        DEFAULT_POLICY,
        PARSERS,
        POLICIES,
        POLICY_TOOLS_IN_SYSTEM_V2,
    )

    parser = subparsers.add_parser(
        "format",
        help="render prepared examples into a formatted split with a chat template",
        description="Render prepared examples (JSONL) into sommelier.formatted_example.v2 rows "
        "with a tokenizer's chat template; the output is written atomically.",
    )
    parser.add_argument("prepared", help="prepared examples (JSONL)")
    parser.add_argument(
        "--tokenizer",
        required=True,
        help="hub id, local folder, .gguf file, or pkg:<package>/<path>",
    )
    parser.add_argument("--revision", default=None, help="hub revision (required for hub ids)")
    parser.add_argument("--split", required=True, help="split name recorded in every row")
    parser.add_argument("--out", required=True, help="formatted split to write (JSONL)")
    parser.add_argument(
        "--policy",
        default=None,
        choices=sorted(POLICIES),
        help=f"template policy (default {DEFAULT_POLICY}; {POLICY_TOOLS_IN_SYSTEM_V2} under "
        "--parser v2)",
    )
    parser.add_argument(
        "--parser",
        default="v1",
        choices=PARSERS,
        help="the parser the split is for ([parser] version; default v1); v2 formats rows "
        "with several gold calls (gold_calls): target_text is the array of the calls",
    )
    parser.add_argument(
        "--arguments-key",
        default="arguments",
        choices=ARGUMENTS_KEYS,
        help="the key the template writes a call's arguments under, for the target check of "
        "sommelier.native-tools.v1 (Llama 3.x: parameters; default arguments)",
    )
    parser.add_argument(
        "--template-kwarg",
        action="append",
        metavar="KEY=VALUE",
        help="a chat-template option (repeatable; VALUE is JSON), e.g. enable_thinking=false; "
        "recorded in every row (formatted_example.v3) and digested into prompt_sha256",
    )
    parser.set_defaults(handler=run)


__all__ = ["add_parser", "run"]
