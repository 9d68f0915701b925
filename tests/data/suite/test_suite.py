"""Loading a valid suite: defaults, reference classification, gates, the resolved identity."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from suite_factory import FAKE_REVISION, write_suite

from pytest_sommelier.core.decoding import DEFAULT_DECODING, validate_decoding
from pytest_sommelier.core.types import ArmConfig, ComparisonConfig, GateConfig, StatisticsConfig
from pytest_sommelier.data.digests import sha256_file, sha256_tree
from pytest_sommelier.data.references import reference_kind
from pytest_sommelier.data.suite.load import load_suite, suite_identity
from pytest_sommelier.errors import InputError, SommelierEnvironmentError


def test_factory_suite_loads(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path))
    assert suite.path == (tmp_path / "sommelier.toml").resolve()
    assert suite.name == "factory"
    assert suite.slices == ("en", "he")
    assert suite.reference_slice == "en"
    assert suite.test_split == tmp_path.resolve() / "data" / "test.jsonl"
    assert suite.model.base == "fake-org/fake-model"
    assert suite.model.revision == FAKE_REVISION
    assert suite.arms == {
        "base": ArmConfig("base", None, None),
        "adapter": ArmConfig("adapter", str(tmp_path.resolve() / "adapter"), None),
    }
    assert list(suite.arms) == ["base", "adapter"]
    assert suite.comparisons == (ComparisonConfig("adapter", "base"),)
    assert suite.comparisons[0].name == "adapter-vs-base"
    assert suite.statistics == StatisticsConfig(seed=41, resamples=200, confidence_level=0.95)


def test_defaults_fill_missing_decoding_and_statistics(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, decoding=None, statistics=None, comparisons=None))
    assert suite.decoding == {
        "temperature": 0.0,
        "do_sample": False,
        "max_new_tokens": 512,
        "batch_size": 1,
    }
    assert suite.statistics == StatisticsConfig(seed=41, resamples=2000, confidence_level=0.95)
    assert suite.comparisons == ()
    assert suite.gates == ()


def test_integer_zero_temperature_is_read_as_float_zero(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, decoding={"temperature": 0, "batch_size": 4}))
    assert suite.decoding["temperature"] == 0.0
    assert isinstance(suite.decoding["temperature"], float)
    assert suite.decoding["batch_size"] == 4


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", False),
        ("temperature", "0.0"),
        ("temperature", float("nan")),
        ("temperature", 1e-9),
        ("do_sample", 0),
        ("max_new_tokens", 1.5),
        ("max_new_tokens", True),
        ("batch_size", 2.0),
    ],
)
def test_decoding_is_never_coerced(field: str, value: object) -> None:
    with pytest.raises(Exception, match=f"decoding.{field}") as info:
        validate_decoding({field: value})
    assert info.value.code.startswith("SOM-DECODING-")


def test_validate_decoding_returns_defaults_and_refuses_unknown_keys() -> None:
    assert validate_decoding({}) == DEFAULT_DECODING
    with pytest.raises(Exception, match="top_p") as info:
        validate_decoding({"top_p": 1.0})
    assert info.value.code == "SOM-DECODING-UNKNOWN-KEY"


def test_existing_relative_path_wins_over_hub_pattern(tmp_path: Path) -> None:
    (tmp_path / "models" / "tiny").mkdir(parents=True)
    suite = load_suite(write_suite(tmp_path, model={"base": "models/tiny", "revision": None}))
    assert suite.model.base == str(tmp_path.resolve() / "models" / "tiny")
    assert reference_kind(suite.model.base) == "local"


def test_revision_on_a_local_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "models" / "tiny").mkdir(parents=True)
    with pytest.raises(InputError) as info:
        load_suite(write_suite(tmp_path, model={"base": "models/tiny"}))
    assert info.value.code == "SOM-SUITE-REVISION-UNUSED"


def test_gguf_file_is_a_base_but_other_files_are_not(tmp_path: Path) -> None:
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    (tmp_path / "m.bin").write_bytes(b"x")
    suite = load_suite(write_suite(tmp_path, model={"base": "m.gguf", "revision": None}))
    assert suite.model.base.endswith("m.gguf")
    with pytest.raises(InputError) as info:
        load_suite(write_suite(tmp_path, model={"base": "m.bin", "revision": None}))
    assert info.value.code == "SOM-SUITE-MODEL-KIND"


def test_absolute_path_outside_the_folder_is_allowed(tmp_path: Path) -> None:
    outside = tmp_path / "shared-models" / "tiny"
    outside.mkdir(parents=True)
    suite = load_suite(
        write_suite(tmp_path / "suite", model={"base": str(outside), "revision": None})
    )
    assert suite.model.base == str(outside)


def test_symlink_inside_the_folder_may_point_outside(tmp_path: Path) -> None:
    outside = tmp_path / "cache" / "adapter-v1"
    outside.mkdir(parents=True)
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "v1").symlink_to(outside, target_is_directory=True)
    suite = load_suite(
        write_suite(folder, arms={"base": {}, "v1": {"adapter": "v1"}}, comparisons=None)
    )
    assert suite.arms["v1"].adapter == str(folder.resolve() / "v1")


def test_hub_adapter_keeps_its_revision(tmp_path: Path) -> None:
    arms = {"base": {}, "v3": {"adapter": "org/adapter-v3", "adapter_revision": "abc123"}}
    suite = load_suite(write_suite(tmp_path, arms=arms, comparisons=None))
    assert suite.arms["v3"] == ArmConfig("v3", "org/adapter-v3", "abc123")
    assert reference_kind("org/adapter-v3") == "hub"


def test_an_adapter_must_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "adapter.safetensors").write_bytes(b"x")
    arms = {"base": {}, "v1": {"adapter": "adapter.safetensors"}}
    with pytest.raises(InputError) as info:
        load_suite(write_suite(tmp_path, arms=arms, comparisons=None))
    assert info.value.code == "SOM-SUITE-MODEL-KIND"


def test_pkg_reference_is_kept_as_written(tmp_path: Path) -> None:
    base = "pkg:pytest_sommelier/data/schemas"
    suite = load_suite(write_suite(tmp_path, model={"base": base, "revision": None}))
    assert suite.model.base == base
    assert reference_kind(base) == "pkg"


def test_pkg_reference_to_a_missing_package(tmp_path: Path) -> None:
    model = {"base": "pkg:no_such_package_xyz/m.gguf", "revision": None}
    with pytest.raises(SommelierEnvironmentError) as info:
        load_suite(write_suite(tmp_path, model=model))
    assert "model.base 'pkg:no_such_package_xyz/m.gguf'" in str(info.value)


def test_gate_kinds_and_slices(tmp_path: Path) -> None:
    gates = [
        {"name": "exact", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.7},
        {
            "name": "uplift",
            "candidate": "adapter",
            "reference": "base",
            "metric": "argument_f1",
            "slice": "he",
            "ci_lower_above": 0,
        },
        {
            "name": "gap",
            "arm": "adapter",
            "gap": "he",
            "metric": "argument_f1",
            "ci_lower_at_least": -0.15,
        },
    ]
    suite = load_suite(write_suite(tmp_path, gates=gates))
    exact, uplift, gap = suite.gates
    assert (exact.kind, exact.slice, exact.min, exact.max) == ("arm", "overall", 0.7, None)
    assert (uplift.kind, uplift.slice, uplift.ci_lower_above) == ("comparison", "he", 0.0)
    assert isinstance(uplift.ci_lower_above, float)
    assert gap == GateConfig(
        name="gap",
        kind="gap",
        metric="argument_f1",
        slice="he",
        arm="adapter",
        candidate=None,
        reference=None,
        gap="he",
        min=None,
        max=None,
        ci_lower_above=None,
        ci_lower_at_least=-0.15,
        delta_at_least=None,
    )


@pytest.mark.parametrize(
    ("gate", "code"),
    [
        (
            {"arm": "adapter", "metric": "argument_f1", "min": 0.8, "max": 0.2},
            "SOM-SUITE-GATE-THRESHOLD",
        ),
        (
            {
                "candidate": "adapter",
                "reference": "base",
                "metric": "argument_f1",
                "ci_lower_above": 0.0,
                "delta_at_least": 0.0,
            },
            "SOM-SUITE-GATE-THRESHOLD",
        ),
        (
            {"arm": "adapter", "candidate": "adapter", "metric": "argument_f1", "min": 0.1},
            "SOM-SUITE-GATE-KIND",
        ),
        (
            {"candidate": "adapter", "metric": "argument_f1", "ci_lower_above": 0.0},
            "SOM-SUITE-GATE-KIND",
        ),
        (
            {
                "candidate": "base",
                "reference": "adapter",
                "metric": "argument_f1",
                "ci_lower_above": 0.0,
            },
            "SOM-SUITE-GATE-COMPARISON",
        ),
        (
            {
                "arm": "adapter",
                "gap": "he",
                "slice": "overall",
                "metric": "argument_f1",
                "delta_at_least": -0.1,
            },
            "SOM-SUITE-UNKNOWN-SLICE",
        ),
    ],
    ids=[
        "min-above-max",
        "two-thresholds",
        "mixed-kind",
        "half-comparison",
        "unconfigured-comparison",
        "gap-with-other-slice",
    ],
)
def test_inconsistent_gates(tmp_path: Path, gate: dict, code: str) -> None:
    with pytest.raises(InputError) as info:
        load_suite(write_suite(tmp_path, gates=[{"name": "g", **gate}]))
    assert info.value.code == code


def test_any_number_of_arms_and_comparisons(tmp_path: Path) -> None:
    for name in ("v1", "v3"):
        (tmp_path / name).mkdir(parents=True)
    arms = {"base": {}, "v1": {"adapter": "v1"}, "v3": {"adapter": "v3"}}
    comparisons = [
        {"candidate": "v3", "reference": "base"},
        {"candidate": "v3", "reference": "v1"},
    ]
    suite = load_suite(write_suite(tmp_path, arms=arms, comparisons=comparisons))
    assert list(suite.arms) == ["base", "v1", "v3"]
    assert [c.name for c in suite.comparisons] == ["v3-vs-base", "v3-vs-v1"]


def test_identity_has_digests_not_machine_paths(tmp_path: Path) -> None:
    (tmp_path / "m.gguf").write_bytes(b"GGUF-weights")
    suite = load_suite(write_suite(tmp_path, model={"base": "m.gguf", "revision": None}))
    identity = suite_identity(suite)
    text = json.dumps(identity)
    assert str(tmp_path) not in text
    assert identity["model"]["base"] == {
        "kind": "local",
        "sha256": sha256_file(tmp_path / "m.gguf"),
    }
    assert identity["arms"]["adapter"]["adapter"] == {
        "kind": "local",
        "sha256": sha256_tree(tmp_path / "adapter"),
    }
    assert identity["arms"]["base"] == {"model_kind": "base", "adapter": None}
    assert identity["test_split"] == {
        "file": "test.jsonl",
        "sha256": sha256_file(tmp_path / "data" / "test.jsonl"),
    }
    assert identity["decoding"] == suite.decoding
    assert identity["slices"] == ["en", "he"]


def test_identity_of_hub_and_pkg_references(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path))
    assert suite_identity(suite)["model"]["base"] == {
        "kind": "hub",
        "id": "fake-org/fake-model",
        "revision": FAKE_REVISION,
    }
    base = "pkg:pytest_sommelier/data/schemas"
    suite = load_suite(write_suite(tmp_path, model={"base": base, "revision": None}))
    identity = suite_identity(suite)["model"]["base"]
    assert identity["kind"] == "pkg" and identity["ref"] == base
    assert len(identity["sha256"]) == 64


def test_identity_survives_a_move_and_sees_an_edit(tmp_path: Path) -> None:
    first = write_suite(tmp_path / "a")
    moved = tmp_path / "b"
    shutil.copytree(first.parent, moved)
    assert suite_identity(load_suite(first)) == suite_identity(load_suite(moved / "sommelier.toml"))
    (moved / "adapter" / "adapter_config.json").write_text('{"peft_type": "LORA", "r": 8}')
    assert suite_identity(load_suite(first)) != suite_identity(load_suite(moved / "sommelier.toml"))


# --- [statistics] interval, cluster, familywise, power; margins ------------------------------


def test_statistics_defaults_and_settings(tmp_path: Path) -> None:
    default = load_suite(write_suite(tmp_path / "a")).statistics
    assert (default.interval, default.cluster, default.familywise, default.power) == (
        "auto", "root", "none", 0.8)  # fmt: skip
    chosen = load_suite(write_suite(tmp_path / "b", statistics={
        "interval": "bootstrap", "cluster": "example", "familywise": "holm", "power": 0.9,
    })).statistics  # fmt: skip
    assert chosen == StatisticsConfig(seed=41, resamples=200, confidence_level=0.95,
                                      interval="bootstrap", cluster="example",
                                      familywise="holm", power=0.9)  # fmt: skip


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("interval", "bca", "key 'interval': 'bca' is not one of ['auto', 'bootstrap']"),
        ("cluster", "roots", "key 'cluster': 'roots' is not one of ['root', 'example']"),
        ("familywise", "sidak", "key 'familywise': 'sidak' is not one of"),
        ("power", 1.0, "key 'power' = 1.0 is outside [0.5, 0.999]"),
        ("power", "high", "key 'power' must be a number"),
    ],
)
def test_statistics_settings_are_refused_naming_the_key(
    tmp_path: Path, key: str, value: object, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        load_suite(write_suite(tmp_path, statistics={key: value}))
    text = str(caught.value)
    assert "[statistics]" in text and message in text and "\n" not in text


MARGIN = {"name": "m", "candidate": "adapter", "reference": "base", "metric": "argument_f1"}


def test_a_gate_takes_a_lower_and_an_upper_margin(tmp_path: Path) -> None:
    gates = [{**MARGIN, "ci_lower_at_least": -0.05, "ci_upper_at_most": 0.05}]
    (gate,) = load_suite(write_suite(tmp_path, gates=gates)).gates
    bounds = (gate.ci_lower_at_least, gate.ci_upper_at_most, gate.ci_upper_below)
    assert bounds == (-0.05, 0.05, None)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"ci_lower_at_least": 0.1, "ci_upper_at_most": -0.1},
         "gates.ci_lower_at_least 0.1 is above gates.ci_upper_at_most -0.1"),
        ({"ci_upper_below": 0.1, "ci_upper_at_most": 0.2}, "needs one of ci_lower_above"),
        ({"ci_upper_below": 0.1, "delta_at_least": 0.0}, "or delta_at_least alone"),
        ({"ci_upper_at_most": 1.5}, "gates.ci_upper_at_most = 1.5 is outside [-1, 1]"),
    ],
)  # fmt: skip
def test_margins_that_cannot_work_are_refused(tmp_path: Path, fields: dict, message: str) -> None:
    with pytest.raises(InputError, match="SOM-SUITE-GATE-THRESHOLD") as caught:
        load_suite(write_suite(tmp_path, gates=[{**MARGIN, **fields}]))
    assert message in str(caught.value)
