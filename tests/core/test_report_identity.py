"""``core.report_identity``'s adapter content rule: "adapter changed" (``sommelier compare``,
``sommelier history``) and the generation cache's key compare the adapter's content, never the
arm's name or the preflight's record (issue 41: `adapter changed` between two runs with the
same adapter digest)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.report_identity import (
    ADAPTER_NAME_KEY,
    PREFLIGHT_KEY,
    adapter_content,
    adapter_differs,
)

DIGEST = "0a7c761c" * 8
PREFLIGHT = {"peft_type": "LORA", "lora_tensors": 24, "mapped_modules": 12, "warnings": []}


def test_the_same_digest_under_another_name_or_preflight_is_the_same_adapter() -> None:
    shipped = {"name": "adapter", "sha256": DIGEST, PREFLIGHT_KEY: PREFLIGHT}
    live = {"name": "adapter@30", "sha256": DIGEST}  # the callback's: no preflight record
    warned = {**shipped, PREFLIGHT_KEY: {**PREFLIGHT, "warnings": ["a module maps to none"]}}
    assert not adapter_differs(shipped, live)
    assert not adapter_differs(shipped, warned)
    assert adapter_content(shipped) == adapter_content(live) == {"sha256": DIGEST}


def test_another_digest_or_revision_is_another_adapter() -> None:
    assert adapter_differs({"sha256": DIGEST}, {"sha256": "f" * 64})
    assert adapter_differs({"hub_id": "o/x", "revision": "a"}, {"hub_id": "o/x", "revision": "b"})
    assert adapter_differs(None, {"sha256": DIGEST})  # a base arm that became an adapter
    assert not adapter_differs(None, None)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8,
)


@settings(max_examples=examples(100))
@given(
    content=st.dictionaries(st.sampled_from(["sha256", "hub_id", "revision", "served_name"]),
                            st.text(max_size=12), max_size=3),
    names=st.tuples(JSON, JSON),
    preflights=st.tuples(JSON, JSON),
)
def test_only_the_content_decides(content: dict, names: tuple, preflights: tuple) -> None:
    left = {**content, ADAPTER_NAME_KEY: names[0], PREFLIGHT_KEY: preflights[0]}
    right = {**content, ADAPTER_NAME_KEY: names[1], PREFLIGHT_KEY: preflights[1]}
    assert not adapter_differs(left, right)
    assert adapter_differs(left, {**right, "sha256": "other:" + str(content.get("sha256"))})
