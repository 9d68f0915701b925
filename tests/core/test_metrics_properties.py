"""Hypothesis properties of the metrics: additivity, order independence, flattening."""

from __future__ import annotations

import copy
import itertools
import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.metrics import (
    METRIC_NAMES,
    argument_diff_paths,
    canonical_json,
    component_arrays,
    compute_metrics,
    example_components,
    flatten_arguments,
)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([0.5, 1.0, -0.0]),
    st.sampled_from(["", "2", "a", "a.b", "{}", "[]"]),
)
KEYS = st.sampled_from(["a", "b", "a.b", "0", "", "x[0]", 'q"', "é", "<root>"])
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=8,
)
ARGUMENTS = st.dictionaries(KEYS, VALUES, max_size=4)
NAMES = st.sampled_from(["f", "g", "get_weather"])


@st.composite
def records(
    draw: st.DrawFn, arguments: st.SearchStrategy[dict[str, Any]] = ARGUMENTS
) -> dict[str, Any]:
    """A consistent scoring record: a parse failure, or an ok call near the gold call (its
    arguments, and a random call's, drawn from ``arguments``)."""
    gold = {"name": draw(NAMES), "arguments": draw(arguments)}
    kind = draw(st.sampled_from(["failure", "exact", "name", "args", "random"]))
    parsed: dict[str, Any] | None
    if kind == "failure":
        status = draw(st.sampled_from(["no_json", "invalid_json", "invalid_shape"]))
        parsed = None
    else:
        status = "ok"
        parsed = copy.deepcopy(gold)
        if kind in ("name", "random"):
            parsed["name"] = draw(NAMES)
        if kind == "args":
            parsed["arguments"][draw(KEYS)] = draw(VALUES)
        if kind == "random":
            parsed["arguments"] = draw(arguments)  # read, never changed
    return {
        "example_id": f"ex-{draw(st.integers(0, 10**6))}",
        "parse_status": status,
        "parsed_call": parsed,
        "gold_call": gold,
    }


@st.composite
def batches(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Up to 12 records whose gold and random arguments are picked from a drawn pool of 1-4
    argument objects: drawing nested ARGUMENTS for every record was most of the batch
    properties' time; what they check (sums, order) is over records, whose names, kinds, near
    misses and failures are still drawn one by one."""
    pool = draw(st.lists(ARGUMENTS, min_size=1, max_size=4))
    return draw(st.lists(records(st.sampled_from(pool)), max_size=12))


@settings(max_examples=examples(100))
@given(batches())
def test_components_sum_to_totals(batch: list[dict[str, Any]]) -> None:
    metrics = compute_metrics(batch)
    for index, name in enumerate(METRIC_NAMES):
        numerator = sum(example_components(r)[index][0] for r in batch)
        denominator = sum(example_components(r)[index][1] for r in batch)
        assert metrics[name]["numerator"] == numerator
        assert metrics[name]["denominator"] == denominator
        if denominator:
            assert metrics[name]["value"] == numerator / denominator
        else:
            assert metrics[name]["value"] is None
    numerators, denominators = component_arrays(batch)
    assert numerators.sum(axis=0).tolist() == [m["numerator"] for m in metrics.values()]
    assert denominators.sum(axis=0).tolist() == [m["denominator"] for m in metrics.values()]


@settings(max_examples=examples(100))
@given(batches(), st.randoms(use_true_random=False))
def test_record_order_does_not_matter(batch: list[dict[str, Any]], rng: Any) -> None:
    shuffled = list(batch)
    rng.shuffle(shuffled)
    assert compute_metrics(shuffled) == compute_metrics(batch)


@settings(max_examples=examples(100))
@given(records())
def test_component_bounds_and_denominators(r: dict[str, Any]) -> None:
    components = example_components(r)
    assert [den for _, den in components[:3]] == [1, 1, 1] and components[4][1] == 1
    assert all(0 <= num <= den for num, den in components)
    gold_pairs = len(flatten_arguments(r["gold_call"]["arguments"]))
    f1_num, f1_den = components[3]
    if r["parse_status"] != "ok":
        assert components == ((0, 1), (0, 1), (0, 1), (0, gold_pairs), (0, 1))
    # Every example counts every gold pair in F1's denominator.
    assert f1_den >= gold_pairs >= 1
    # Exact arguments and a perfect F1 component are the same thing.
    assert (components[2][0] == 1) == (f1_num == f1_den)
    assert components[4][0] == components[1][0] * components[2][0]


@settings(max_examples=examples(100))
@given(ARGUMENTS, ARGUMENTS)
def test_flattening_is_faithful(one: dict[str, Any], other: dict[str, Any]) -> None:
    # Two argument objects flatten to the same pairs exactly when their canonical JSON agrees.
    same_json = canonical_json(one) == canonical_json(other)
    assert (flatten_arguments(one) == flatten_arguments(other)) == same_json
    assert (argument_diff_paths(one, other) == []) == same_json


@settings(max_examples=examples(100))
@given(ARGUMENTS)
def test_flattening_paths_are_unique_and_sorted(arguments: dict[str, Any]) -> None:
    pairs = flatten_arguments(arguments)
    paths = [path for path, _ in pairs]
    assert len(set(paths)) == len(paths)
    assert pairs == sorted(pairs)
    assert argument_diff_paths(arguments, None) == sorted(paths)


_SEGMENT = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def _decode_path(path: str) -> list[str | int]:
    """Split a path into keys and indexes; every character must belong to a segment."""
    steps: list[str | int] = []
    pos = 0
    while pos < len(path):
        match = _SEGMENT.match(path, pos)
        assert match is not None, f"undecodable path {path!r} at {pos}"
        ident, index, quoted = match.groups()
        steps.append(int(index) if index is not None else ident or json.loads(quoted))
        pos = match.end()
    return steps


def _slot(node: Any, step: str | int, default: Any) -> Any:
    """The child of ``node`` at ``step``, created as ``default`` when absent."""
    if isinstance(step, int):
        node.extend([None] * (step + 1 - len(node)))
        if node[step] is None:
            node[step] = default
        return node[step]
    return node.setdefault(step, default)


def _unflatten(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Rebuild arguments from their pairs (a test-side decoder of the documented path syntax)."""
    if pairs == [("<root>", "{}")]:
        return {}
    root: dict[str, Any] = {}
    for path, leaf in pairs:
        steps = _decode_path(path)
        node: Any = root
        for step, following in itertools.pairwise(steps):
            node = _slot(node, step, [] if isinstance(following, int) else {})
        if isinstance(steps[-1], int):
            _slot(node, steps[-1], None)
        node[steps[-1]] = json.loads(leaf)
    return root


@settings(max_examples=examples(100))
@given(ARGUMENTS)
def test_flattening_is_invertible(arguments: dict[str, Any]) -> None:
    # Invertible means injective: no two different structures can share their pairs.
    rebuilt = _unflatten(flatten_arguments(arguments))
    assert canonical_json(rebuilt) == canonical_json(arguments)


@settings(max_examples=examples(100))
@given(ARGUMENTS, ARGUMENTS)
def test_diff_paths_are_symmetric(one: dict[str, Any], other: dict[str, Any]) -> None:
    assert argument_diff_paths(one, other) == argument_diff_paths(other, one)
