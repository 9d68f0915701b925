"""``SommelierCallback(every="save:N")``: every Nth save of a real ``Trainer``, the Trainer's own
``checkpoint-<step>`` folder evaluated (never a copy of the callback's), so a checkpoint sweep
of the same folders afterwards generates nothing new for them; the count of saves goes on
after ``resume_from_checkpoint``; any other value of ``every`` is one ``SOM-TRAIN-OPTION`` line.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from plugin_helpers import read_json, read_jsonl  # noqa: E402
from test_training_callback import dataset, lora_model, training_suite  # noqa: E402

from pytest_sommelier.errors import InputError  # noqa: E402
from pytest_sommelier.training import SommelierCallback  # noqa: E402
from pytest_sommelier.training.callback import SAVE_LIMIT, saves_before  # noqa: E402

# -- every= (fast) ------------------------------------------------------------------------------

HOSTILE = ["save:0", "save:-1", "save:x", "save:1e3", "save:", "save:1.0", "save:٢", "save:1_0",
           "save:2:3", "Save:2", "save2", "save:10000000000", " save", "sometimes", "",
           "3"]  # fmt: skip


def expected_period(value: Any) -> int | str | None:
    """What ``every=value`` should be: its save period, None (accepted, no save period) or
    ``"refused"``, written out independently of the callback's parser."""
    if isinstance(value, bool):
        return "refused"
    if isinstance(value, int):
        return None if value >= 1 else "refused"
    if value == "evaluate":
        return None
    if value == "save":
        return 1
    if isinstance(value, str) and value.startswith("save:"):
        digits = value[len("save:") :].strip()
        if digits.lstrip("+").isascii() and digits.lstrip("+").isdigit():
            number = int(digits)
            return number if 1 <= number <= SAVE_LIMIT else "refused"
    return "refused"


@settings(max_examples=examples(300), deadline=None)
@given(
    value=st.one_of(
        st.sampled_from(HOSTILE), st.text(max_size=12),
        st.text(max_size=12).map(lambda t: "save:" + t),
        st.integers(-(2**40), 2**40).map(lambda n: f"save:{n}"),
        st.integers(-5, 2**40), st.booleans(), st.none(), st.floats(allow_nan=True),
        st.lists(st.integers(), max_size=2),
    )
)  # fmt: skip
def test_every_is_a_trigger_or_one_line(value: Any) -> None:
    expected = expected_period(value)
    try:
        callback = SommelierCallback("x.toml", every=value)
    except InputError as error:
        text = str(error)
        assert expected == "refused", (value, text)
        assert error.code == "SOM-TRAIN-OPTION" and "\n" not in text
        assert "SommelierCallback(every=...)" in text and "'save:N'" in text
        return
    assert expected != "refused", value
    assert callback.save_every == expected and callback.every == value


def test_the_hostile_values_named_by_the_issue_are_refused() -> None:
    for value in ("save:0", "save:-1", "save:x", "save:1e3"):
        with pytest.raises(InputError) as caught:
            SommelierCallback("x.toml", every=value)
        assert caught.value.code == "SOM-TRAIN-OPTION" and repr(value) in str(caught.value)
    assert SommelierCallback("x.toml", every="save:3").save_every == 3
    assert SommelierCallback("x.toml", every="save").save_every == 1


def test_saves_before_a_resumed_step_follow_the_trainers_schedule() -> None:
    def count(strategy: str, step: int, save_steps: int = 0, epoch: float | None = None) -> Any:
        args = SimpleNamespace(save_strategy=strategy, save_steps=save_steps)
        state = SimpleNamespace(global_step=step, save_steps=save_steps, epoch=epoch)
        return saves_before(args, state)

    assert count("steps", 6, 2) == 3  # saves at 2, 4, 6
    assert count("steps", 7, 2) == 4  # ... and at the last step, 7
    assert count("epoch", 12, epoch=3.0) == 3
    assert count("best", 12) is None and count("steps", 4, 0) is None


# -- a real trainer -----------------------------------------------------------------------------


def train(model_dir: Path, out: Path, callback: Any, steps: int, resume: str | None = None) -> Any:
    """A trainer that saves every step (so every="save:2" evaluates every second step)."""
    from transformers import Trainer, TrainingArguments

    args = TrainingArguments(
        output_dir=str(out), max_steps=steps, save_strategy="steps", save_steps=1,
        per_device_train_batch_size=2, learning_rate=5e-2, logging_steps=1, use_cpu=True,
        report_to="none", disable_tqdm=True, seed=0,
    )  # fmt: skip
    trainer = Trainer(model=lora_model(model_dir), args=args, train_dataset=dataset(model_dir))
    callback.attach(trainer)
    trainer.train(resume_from_checkpoint=resume)
    return trainer


@pytest.mark.slow
def test_every_second_save_evaluates_the_trainers_checkpoints_and_the_sweep_reuses_them(
    tiny: tuple[Path, Path], tmp_path: Path, pytester: pytest.Pytester
) -> None:
    model_dir, _ = tiny
    arms = {"base": {}, "adapter": {"adapter": "../out/checkpoint-*"}}
    suite = training_suite(tmp_path, model_dir, arms=arms)
    cache = tmp_path / "cache"
    callback = SommelierCallback(suite, every="save:2", out=tmp_path / "runs",
                                 store=tmp_path / "store", cache_dir=cache, quiet=True)  # fmt: skip
    trainer = train(model_dir, tmp_path / "out", callback, steps=4)
    assert [r.step for r in callback.results] == [2, 4]
    out = tmp_path / "out"  # the Trainer's own folders, never a copy of the callback's
    assert [r.folder for r in callback.results] == [out / "checkpoint-2", out / "checkpoint-4"]
    assert not (tmp_path / "runs" / "adapters").exists()
    logged = [e["step"] for e in trainer.state.log_history if "sommelier/stored_run" in e]
    assert logged == [2, 4]
    # the checkpoint sweep of the same folders: the evaluated ones come from the cache
    run = pytester.runpytest_subprocess(
        str(suite.parent), "-p", "no:cacheprovider", "--sommelier-out", "sweep",
        "--sommelier-cache-dir", str(cache),
    )  # fmt: skip
    assert run.ret == 0, run.stdout.str()[-3000:]
    sweep = pytester.path / "sweep"

    def cached(arm: str) -> list[bool]:
        files = [sweep / "eval" / arm / f"generations.{lang}.jsonl" for lang in ("en", "he")]
        return [row["cached"] for path in files for row in read_jsonl(path)]

    assert all(cached("base"))
    for result in callback.results:  # generated nothing new for the evaluated checkpoints
        arm = f"adapter@{result.step}"
        assert cached(arm) and all(cached(arm)), arm
        ours = read_json(result.run_dir / "eval" / "adapter" / "evaluation_report.json")
        theirs = read_json(sweep / "eval" / arm / "evaluation_report.json")
        assert theirs["metrics"] == ours["metrics"]
    for step in (1, 3):  # the saves the callback skipped were generated by the sweep
        assert not any(cached(f"adapter@{step}")), step


@pytest.mark.slow
def test_a_resumed_trainer_counts_saves_on_and_remembers_the_last_evaluated_one(
    tiny: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)

    def callback() -> SommelierCallback:
        return SommelierCallback(
            suite, every="save:2", out=tmp_path / "runs", store=tmp_path / "store",
            cache_dir=tmp_path / "cache",
        )  # fmt: skip

    first = callback()
    train(model_dir, tmp_path / "out", first, steps=3)  # saves 1, 2, 3: evaluates step 2
    assert [r.step for r in first.results] == [2]
    capsys.readouterr()
    second = callback()  # resumed from checkpoint-3, between two evaluations
    resume = str(tmp_path / "out" / "checkpoint-3")
    train(model_dir, tmp_path / "out", second, steps=6, resume=resume)
    out = capsys.readouterr().out
    assert "resumed at step 3: 1 evaluated checkpoint(s) read back" in out
    assert "(the last evaluated checkpoint: step 2)" in out
    assert [r.step for r in second.results] == [4, 6]  # the 4th and 6th saves, as uninterrupted
    assert "vs previous" in second.results[0].line  # step 4 against step 2
