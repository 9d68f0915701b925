"""``SommelierCallback`` checks all its arguments before a step (docs/hardening.md, rows V03,
V04 and the callback's weak rows): ``arms=["nope"]`` and ``arms="base"`` are one
``SOM-TRAIN-ARMS`` / ``SOM-TRAIN-OPTION`` line (were ``KeyError``); ``seed="x"`` goes through the
number parser; ``store=`` or ``out=`` a file is refused naming the callback's own argument; the
same folder under two spellings is one store; ``metric_for_best_model`` naming a sommelier
number works with ``load_best_model_at_end=True`` (a real ``Trainer`` on the tiny Llama); an
exception inside one evaluation is one line and training goes on; a suite without gates says
"no gates".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from plugin_helpers import rows  # noqa: E402
from property_budget import examples  # noqa: E402
from suite_factory import write_suite  # noqa: E402
from test_training_callback import IDS, dataset, lora_model, train, training_suite  # noqa: E402

from pytest_sommelier.data.suite.load import load_suite  # noqa: E402
from pytest_sommelier.errors import InputError, SommelierError  # noqa: E402
from pytest_sommelier.training import SommelierCallback  # noqa: E402
from pytest_sommelier.training.callback import evaluation_suite, metric_prefix  # noqa: E402


def one_line(error: BaseException, *names: str) -> str:
    text = str(error)
    assert "\n" not in text and isinstance(error, SommelierError), text
    for name in names:
        assert name in text, text
    return text


# -- arms, seed, max_examples (fast) ----------------------------------------------------------


def test_an_arm_the_suite_lacks_is_one_line_not_a_key_error(tmp_path: Path) -> None:
    """V04: ``arms=["nope"]`` raised ``KeyError: 'nope'`` (the adapter-arm list indexed
    ``suite.arms[n]`` before the check); ``arms="base"`` gave ``KeyError: 'b'``."""
    suite = load_suite(write_suite(tmp_path / "s", rows=rows(IDS)))
    with pytest.raises(InputError) as caught:
        evaluation_suite(suite, "adapter", ["nope"])
    assert caught.value.code == "SOM-TRAIN-ARMS"
    one_line(caught.value, "'nope'", "not arms of the suite")
    with pytest.raises(InputError) as caught:
        SommelierCallback("x.toml", arms="base")
    assert caught.value.code == "SOM-TRAIN-OPTION"
    one_line(caught.value, "arms=", "not a list of arm names", "['base']")


@settings(max_examples=examples(200), deadline=None)
@given(
    value=st.one_of(
        st.text(max_size=30), st.integers(-(2**70), 2**70), st.booleans(), st.none(),
        st.floats(allow_nan=True), st.lists(st.integers(), max_size=2),
    ),
    name=st.sampled_from(["seed", "max_examples"]),
)  # fmt: skip
def test_any_seed_or_sample_size_is_a_whole_number_or_one_line(value: Any, name: str) -> None:
    """V04: ``seed="x"`` was accepted and recorded. Any value is a whole number within the
    bounds (ASCII digits as text, an int that is no bool) or one ``SOM-TRAIN-OPTION`` line
    naming the argument."""
    if name == "max_examples" and value is None:
        return  # None: no sample
    try:
        callback = SommelierCallback("x.toml", **{name: value})
    except InputError as error:
        assert error.code == "SOM-TRAIN-OPTION"
        one_line(error, f"SommelierCallback({name}=...)")
        return
    got = getattr(callback, name)
    assert type(got) is int and not isinstance(value, bool | float)
    assert got == (int(value) if isinstance(value, int) else int(value.strip()))
    assert (1 if name == "max_examples" else 0) <= got < 10**18


def test_a_numpy_seed_is_a_seed() -> None:
    import numpy as np

    assert SommelierCallback("x.toml", seed=np.int64(7), max_examples="20").seed == 7


# -- paths: store=, out=, two spellings (fast) ------------------------------------------------


def test_store_or_out_a_file_is_refused_naming_the_callbacks_argument(tmp_path: Path) -> None:
    """V04/weak: ``store=`` a file was found only at the first checkpoint (every evaluation
    thrown away) with a hint naming ``--sommelier-storage``; ``out=`` a file named
    ``--sommelier-out``."""
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for name in ("store", "storage"):
        callback = SommelierCallback("x.toml", out=tmp_path / "runs", **{name: a_file})
        with pytest.raises(InputError) as caught:
            callback.check_arguments(paths=True)
        text = one_line(caught.value, f"SommelierCallback({name}=...)", f"give {name}=")
        assert "--sommelier" not in text
    callback = SommelierCallback("x.toml", out=a_file, store=tmp_path / "store")
    with pytest.raises(SommelierError) as caught:
        callback.check_arguments(paths=True)
    text = one_line(caught.value, "SommelierCallback(out=...)", "out=")
    assert "--sommelier" not in text


def test_out_inside_the_run_store_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    callback = SommelierCallback("x.toml", out=store / "runs", store=store)
    with pytest.raises(InputError) as caught:
        callback.check_arguments(paths=True)
    assert caught.value.code == "SOM-OUTPUT-PATH"
    one_line(caught.value, "SommelierCallback(out=...)", "run store")


def test_one_folder_under_two_spellings_is_one_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Weak: ``storage="/abs/ss"`` with ``store="ss"`` (the same folder) was called two
    stores."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ss").mkdir()
    os.symlink(tmp_path / "ss", tmp_path / "link")
    for other in ("ss", "./ss", "link", "ss/"):
        callback = SommelierCallback("x.toml", storage=tmp_path / "ss", store=other)
        assert callback.store == tmp_path / "ss"
    with pytest.raises(InputError, match="two run stores"):
        SommelierCallback("x.toml", storage=tmp_path / "ss", store="other")


@settings(max_examples=examples(100), deadline=None)
@given(value=st.one_of(st.text(max_size=5000), st.integers(), st.none(), st.binary(max_size=5)))
def test_any_folder_argument_is_a_path_or_one_line(value: Any) -> None:
    for name in ("out", "cache_dir"):
        try:
            SommelierCallback("x.toml", **{name: value})
        except InputError as error:
            text = one_line(error, f"SommelierCallback({name}=...)")
            assert len(text) < 400  # a 5,000-character value is never echoed whole


# -- metric names (fast) -------------------------------------------------------------------


def test_the_metric_prefix_is_the_trainers() -> None:
    assert metric_prefix({"eval_loss": 1.0, "eval_runtime": 2.0}) == "eval"
    assert metric_prefix({"test_loss": 1.0, "test_runtime": 2.0}) == "test"
    assert metric_prefix({}) == "eval"


# -- a real trainer (slow) ---------------------------------------------------------------------


def _evaluating_trainer(model_dir: Path, out: Path, callback: Any, **extra: Any) -> Any:
    from transformers import Trainer, TrainingArguments

    args = TrainingArguments(
        output_dir=str(out), max_steps=4, save_strategy="steps", save_steps=2,
        eval_strategy="steps", eval_steps=2, per_device_train_batch_size=2,
        per_device_eval_batch_size=2, use_cpu=True, report_to="none", disable_tqdm=True,
        seed=0, learning_rate=5e-2, **extra,
    )  # fmt: skip
    data = dataset(model_dir)
    trainer = Trainer(model=lora_model(model_dir), args=args, train_dataset=data,
                      eval_dataset=data[:2])  # fmt: skip
    callback.attach(trainer)
    return trainer


@pytest.mark.slow
def test_metric_for_best_model_names_a_sommelier_number_with_load_best_model_at_end(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    """V03: transformers looks up ``eval_sommelier/...``, which the callback never wrote
    (``KeyError`` at the first evaluation). Now training ends, the best checkpoint is one
    the callback judged, and the metrics carry both names."""
    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    callback = SommelierCallback(suite, every="evaluate", out=tmp_path / "runs",
                                 store=tmp_path / "store", cache_dir=tmp_path / "cache",
                                 quiet=True)  # fmt: skip
    trainer = _evaluating_trainer(
        model_dir, tmp_path / "out", callback, load_best_model_at_end=True,
        metric_for_best_model="sommelier/adapter/full_call_exact_match",
    )  # fmt: skip
    trainer.train()
    assert [r.step for r in callback.results] == [2, 4]
    assert trainer.state.best_metric == callback.results[0].numbers[
        "sommelier/adapter/full_call_exact_match"
    ] or trainer.state.best_metric == callback.results[1].numbers[
        "sommelier/adapter/full_call_exact_match"
    ]  # fmt: skip
    assert trainer.state.best_model_checkpoint is not None
    metrics = trainer.evaluate()  # the same step again: its numbers, not a second run
    assert len(callback.results) == 2
    value = callback.results[-1].numbers["sommelier/adapter/valid_json_rate"]
    assert metrics["eval_sommelier/adapter/valid_json_rate"] == value
    assert metrics["sommelier/adapter/valid_json_rate"] == value


@pytest.mark.slow
def test_a_sommelier_metric_for_best_model_needs_every_evaluate_and_a_known_name(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    for every, name, problem in (
        ("save", "sommelier/adapter/full_call_exact_match", "every='evaluate'"),
        ("evaluate", "eval_sommelier/adaptr/full_call_exact_match", "not a number this"),
        ("evaluate", "sommelier/adapter/accuracy", "not a number this"),
    ):
        callback = SommelierCallback(suite, every=every, out=tmp_path / "runs",
                                     store=tmp_path / "store", cache_dir=None, quiet=True)
        trainer = _evaluating_trainer(model_dir, tmp_path / f"out-{every}", callback,
                                      load_best_model_at_end=True, metric_for_best_model=name)
        with pytest.raises(InputError) as caught:
            trainer.train()
        one_line(caught.value, "metric_for_best_model", problem)
        assert trainer.state.global_step == 0


@pytest.mark.slow
def test_bad_arguments_stop_training_before_any_step(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    """V04: every refusal is raised by ``on_train_begin``, before step 1, the model untouched."""
    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cases = [
        ({"arms": ["nope"]}, "SOM-TRAIN-ARMS"),
        ({"store": a_file}, "SOM-OUTPUT-PATH"),
        ({"out": a_file}, "SOM-OUT"),
    ]
    for index, (kwargs, code) in enumerate(cases):
        kwargs = {"out": tmp_path / f"runs{index}", "store": tmp_path / "store", **kwargs}
        callback = SommelierCallback(suite, cache_dir=None, quiet=True, **kwargs)
        with pytest.raises(SommelierError) as caught:
            train(model_dir, tmp_path / f"out{index}", callback, steps=2)
        one_line(caught.value, code)
        assert not list((tmp_path / f"out{index}").glob("checkpoint-*"))


@pytest.mark.slow
def test_an_exception_inside_an_evaluation_is_one_line_and_training_goes_on(
    tiny: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Weak: a non-Sommelier exception inside an evaluation killed training; now one line,
    that checkpoint has no run, the next one is evaluated; a suite with no gates says so."""
    from pytest_sommelier.training import callback as module

    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    callback = SommelierCallback(suite, out=tmp_path / "runs", store=tmp_path / "store",
                                 cache_dir=tmp_path / "cache")  # fmt: skip
    real = module.evaluate_live
    calls = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise MemoryError("injected")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "evaluate_live", flaky)
    trainer = train(model_dir, tmp_path / "out", callback, steps=4)
    assert trainer.state.global_step == 4
    first, second = callback.results
    assert first.stored is None and "SOM-TRAIN-EVALUATION" in first.errors[0]
    assert "MemoryError: injected" in first.errors[0] and "\n" not in first.errors[0]
    assert second.stored is not None and second.numbers
    out = capsys.readouterr().out
    assert "sommelier: ERROR SOM-TRAIN-EVALUATION" in out
    assert "verdict no gates (nothing was gated)" in second.line
    assert "verdict pass" not in second.line
