"""``SommelierCallback`` inside a real transformers ``Trainer``: a tiny random Llama with a LoRA
adapter trained for a few steps on CPU, evaluated at each save through the session's pipeline.

The fast tests check the state-restoration rule and the callback's refusals on small models;
the slow ones train for real (three saves: three stored runs, one base generation).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from plugin_helpers import read_json, read_jsonl, rows  # noqa: E402
from suite_factory import match_base_tokenizer, write_suite  # noqa: E402

from pytest_sommelier.errors import InputError, SommelierError  # noqa: E402
from pytest_sommelier.training.state import evaluation_mode  # noqa: E402

IDS = ("en-0", "en-1", "en-2", "he-0", "he-1")
STEPS, SAVE_EVERY = 6, 2


# -- the state rule (fast) ------------------------------------------------------------------


def test_evaluation_mode_restores_modes_grads_and_every_generator() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5), torch.nn.Linear(3, 1))
    model.train()
    model[2].eval()  # a submodule kept in eval mode on purpose stays so
    model[2].weight.requires_grad_(False)
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    expected = (random.random(), np.random.random(), torch.rand(1).item())
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    with evaluation_mode(model):
        assert not model.training and not model[1].training
        assert not torch.is_grad_enabled()
        random.random(), np.random.random(), torch.rand(5)  # an evaluation that draws
        model[0].weight.requires_grad_(False)  # and flips a flag (peft's set_adapter does)
    assert [m.training for m in model.modules()] == [True, True, True, False]
    assert model[0].weight.requires_grad and not model[2].weight.requires_grad
    assert torch.is_grad_enabled()
    assert (random.random(), np.random.random(), torch.rand(1).item()) == expected


def test_evaluation_mode_restores_after_an_error() -> None:
    model = torch.nn.Linear(2, 2)
    model.train()
    torch.manual_seed(5)
    expected = torch.rand(1).item()
    torch.manual_seed(5)
    with pytest.raises(RuntimeError), evaluation_mode(model):
        torch.rand(3)
        raise RuntimeError("generation failed")
    assert model.training and torch.is_grad_enabled()
    assert torch.rand(1).item() == expected


# -- a real trainer -----------------------------------------------------------------------------


def training_suite(root: Path, model_dir: Path, **overrides: Any) -> Path:
    """A suite with one base arm over a copy of the tiny model (the trained arm is added by
    the callback)."""
    overrides.setdefault("decoding", {"max_new_tokens": 6, "batch_size": 2})
    overrides.setdefault("arms", {"base": {}})
    overrides.setdefault("comparisons", None)
    suite = write_suite(
        root / "suite", rows=rows(IDS), model={"base": "model", "revision": None}, **overrides
    )
    shutil.rmtree(suite.parent / "adapter")
    if not (suite.parent / "model").exists():
        shutil.copytree(model_dir, suite.parent / "model")
    return match_base_tokenizer(suite)


def lora_model(model_dir: Path, seed: int = 0) -> Any:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(model_dir, use_safetensors=True)
    config = LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.1,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(base, config)


def dataset(model_dir: Path) -> list[dict[str, Any]]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    texts = [f'<|im_start|>user\nweather {i}<|im_end|>\n{{"name": "w", "arguments": {{}}}}'
             for i in range(8)]
    out = []
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"][:48]
        ids = ids + [tokenizer.pad_token_id] * (48 - len(ids))
        out.append({"input_ids": ids, "attention_mask": [1] * 48, "labels": ids})
    return out


def train(
    model_dir: Path, out: Path, callback: Any = None, *, steps: int = STEPS, attach: bool = True
) -> Any:
    from transformers import Trainer, TrainingArguments

    args = TrainingArguments(
        output_dir=str(out), max_steps=steps, save_strategy="steps", save_steps=SAVE_EVERY,
        per_device_train_batch_size=2, learning_rate=5e-2, logging_steps=1, use_cpu=True,
        report_to="none", disable_tqdm=True, seed=0, dataloader_num_workers=0,
    )
    trainer = Trainer(model=lora_model(model_dir), args=args, train_dataset=dataset(model_dir))
    if callback is not None:
        if attach:
            callback.attach(trainer)
        else:
            trainer.add_callback(callback)
    trainer.train()
    return trainer


@pytest.fixture(scope="module")
def trained(tiny: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One training run with the callback (every save) and one without."""
    from pytest_sommelier.training import SommelierCallback

    root = tmp_path_factory.mktemp("train")
    model_dir, _ = tiny
    # one suite for the callback and the later sweep: its adapter the glob over the checkpoints
    # the training writes (none exists yet when training begins), with a [selection]
    suite = training_suite(
        root, model_dir, arms={"base": {}, "adapter": {"adapter": "../out/checkpoint-*"}},
        selection={"metric": "full_call_exact_match", "among": "adapter@*"},
    )
    callback = SommelierCallback(
        suite, every="save", out=root / "runs", store=root / "store",
        cache_dir=root / "cache", quiet=False,
    )
    with_cb = train(model_dir, root / "out", callback)
    without = train(model_dir, root / "plain")
    return {"root": root, "suite": suite, "callback": callback, "with": with_cb,
            "without": without, "model_dir": model_dir}


@pytest.mark.slow
def test_three_saves_give_three_stored_runs_and_one_base_generation(
    trained: dict[str, Any],
) -> None:
    callback, root = trained["callback"], trained["root"]
    assert [r.step for r in callback.results] == [2, 4, 6]
    index = read_json(root / "store" / "index.json")
    entries = index["runs"] if isinstance(index, dict) else index
    assert [e["training"]["step"] for e in entries] == [2, 4, 6]
    assert [e["training"]["checkpoint"] for e in entries] == [
        "checkpoint-2", "checkpoint-4", "checkpoint-6"
    ]
    origins = []
    for result in callback.results:
        base = read_jsonl(result.run_dir / "eval" / "base" / "generations.en.jsonl")
        adapter = read_jsonl(result.run_dir / "eval" / "adapter" / "generations.en.jsonl")
        origins.append((sum(g["cached"] for g in base), sum(g["cached"] for g in adapter)))
        verdict = read_json(result.run_dir / "gate_verdict.json")
        assert verdict["complete"] is True
        assert (result.run_dir / "report" / "adapter-vs-base.json").is_file()
        assert (result.run_dir / "report.html").is_file()
    # the base arm generated once (the first checkpoint), then served from memory/the cache
    assert [o[0] for o in origins] == [0, 3, 3]
    assert [o[1] for o in origins] == [0, 0, 0]
    # the adapter identity is the checkpoint folder's content digest, as pytest computes it
    from pytest_sommelier.data.digests import sha256_path

    for result, entry in zip(callback.results, entries, strict=True):
        report = read_json(result.run_dir / "eval" / "adapter" / "evaluation_report.json")
        assert report["adapter_identity"]["sha256"] == sha256_path(result.folder)
        assert entry["training"]["adapter_sha256"] == sha256_path(result.folder)


@pytest.mark.slow
def test_log_history_holds_the_sommelier_entries(trained: dict[str, Any]) -> None:
    history = trained["with"].state.log_history
    entries = [e for e in history if "sommelier/adapter/full_call_exact_match" in e]
    assert [e["step"] for e in entries] == [2, 4, 6]
    first, later = entries[0], entries[1:]
    assert "sommelier/adapter-vs-base/full_call_exact_match/delta" in first
    assert "sommelier/adapter-vs-base/full_call_exact_match/lower" in first
    assert "sommelier/adapter-vs-previous/full_call_exact_match/delta" not in first
    assert all("sommelier/adapter-vs-previous/full_call_exact_match/delta" in e for e in later)
    # the logged numbers are the stored run's numbers
    result = trained["callback"].results[0]
    report = read_json(result.run_dir / "eval" / "adapter" / "evaluation_report.json")
    value = report["metrics"]["valid_json_rate"]["value"]
    assert first["sommelier/adapter/valid_json_rate"] == value
    for language, block in report["slices"].items():  # and each slice's, under its name
        for metric, entry in block["metrics"].items():
            assert first[f"sommelier/adapter/{language}/{metric}"] == entry["value"]
    assert {"en", "he"} <= set(report["slices"])


@pytest.mark.slow
def test_weights_are_identical_with_and_without_the_callback(trained: dict[str, Any]) -> None:
    with_cb = dict(trained["with"].model.named_parameters())
    without = dict(trained["without"].model.named_parameters())
    assert with_cb.keys() == without.keys()
    assert all(torch.equal(with_cb[k], without[k]) for k in with_cb)
    assert any("lora_B" in k and with_cb[k].abs().sum() > 0 for k in with_cb)  # it trained
    assert [p.requires_grad for p in trained["with"].model.parameters()] == [
        p.requires_grad for p in trained["without"].model.parameters()
    ]
    losses = [e["loss"] for e in trained["with"].state.log_history if "loss" in e]
    plain = [e["loss"] for e in trained["without"].state.log_history if "loss" in e]
    assert losses == plain


@pytest.mark.slow
def test_console_line_per_checkpoint(trained: dict[str, Any]) -> None:
    lines = [r.line for r in trained["callback"].results]
    assert len(lines) == 3 and all(line.startswith("sommelier step ") for line in lines)
    assert all("\n" not in line and "adapter-vs-base" in line for line in lines)


@pytest.mark.slow
def test_a_suite_the_callback_cannot_load_fails_before_any_step(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    suite.write_text(suite.read_text().replace("[decoding]", "[decoding]\nbogus = 1"))
    callback = SommelierCallback(suite, out=tmp_path / "runs", store=tmp_path / "store")
    with pytest.raises(SommelierError) as caught:
        train(model_dir, tmp_path / "out", callback)
    assert "\n" not in str(caught.value) and "bogus" in str(caught.value)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("checkpoint-*"))


@pytest.mark.slow
def test_a_model_without_a_peft_adapter_is_refused(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=2, use_cpu=True,
                             report_to="none", disable_tqdm=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, use_safetensors=True)
    trainer = Trainer(model=model, args=args, train_dataset=dataset(model_dir))
    SommelierCallback(suite, out=tmp_path / "runs", store=tmp_path / "store").attach(trainer)
    with pytest.raises(InputError) as caught:
        trainer.train()
    assert caught.value.code == "SOM-TRAIN-NO-ADAPTER" and "\n" not in str(caught.value)
    assert trainer.state.global_step == 0


def test_storage_is_the_run_store_and_store_the_same_option(tmp_path: Path) -> None:
    from pytest_sommelier.training import SommelierCallback

    assert SommelierCallback("x.toml", storage=tmp_path / "s").store == tmp_path / "s"
    assert SommelierCallback("x.toml", store=tmp_path / "s").store == tmp_path / "s"
    both = SommelierCallback("x.toml", storage=tmp_path / "s", store=str(tmp_path / "s"))
    assert both.store == tmp_path / "s"
    assert SommelierCallback("x.toml").store == Path(".sommelier")
    with pytest.raises(InputError, match="two run stores") as caught:
        SommelierCallback("x.toml", storage=tmp_path / "a", store=tmp_path / "b")
    assert caught.value.code == "SOM-TRAIN-OPTION" and "\n" not in str(caught.value)


def test_bad_options_are_one_line() -> None:
    from pytest_sommelier.training import SommelierCallback

    with pytest.raises(InputError, match="every="):
        SommelierCallback("x.toml", every="sometimes")
    with pytest.raises(InputError, match="stop_when") as caught:
        from pytest_sommelier.training.stop_rule import parse_stop_rule

        parse_stop_rule("no_improvement:accuracy:2")
    assert "\n" not in str(caught.value)
    assert json.dumps(parse_stop_rule("no_improvement:full_call_exact_match:3")) == (
        '["full_call_exact_match", 3]'
    )


@pytest.mark.slow
def test_the_training_layer_imports_no_pytest() -> None:
    import subprocess
    import sys

    code = ("import sys, pytest_sommelier.training as t; t.SommelierCallback; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_glob_suite_over_the_checkpoints_gives_the_callbacks_numbers(
    trained: dict[str, Any], pytester: pytest.Pytester
) -> None:
    root = trained["root"]
    result = pytester.runpytest_subprocess(  # the very suite file the callback read
        str(trained["suite"].parent), "-p", "no:cacheprovider", "--sommelier-out", "sweep",
        "--sommelier-cache-dir", str(root / "cache"),
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    sweep = pytester.path / "sweep"
    selection = read_json(sweep / "report" / "selection.json")
    assert [c["arm"] for c in selection["candidates"]] == ["adapter@2", "adapter@4", "adapter@6"]
    for callback_run in trained["callback"].results:
        arm = f"adapter@{callback_run.step}"
        ours = read_json(sweep / "eval" / arm / "evaluation_report.json")
        theirs = read_json(callback_run.run_dir / "eval" / "adapter" / "evaluation_report.json")
        assert ours["adapter_identity"]["sha256"] == theirs["adapter_identity"]["sha256"]
        assert ours["model_identity"] == theirs["model_identity"]
        assert ours["config_sha256"] == theirs["config_sha256"]
        assert ours["metrics"] == theirs["metrics"]
        for language in ("en", "he"):
            rows = read_jsonl(sweep / "eval" / arm / f"generations.{language}.jsonl")
            assert rows and all(row["cached"] for row in rows)  # every output a cache hit
            stored = read_jsonl(callback_run.run_dir / "eval" / "adapter"
                                / f"generations.{language}.jsonl")
            assert [r["raw_text"] for r in rows] == [r["raw_text"] for r in stored]
        comparison = read_json(sweep / "report" / f"{arm}-vs-base.json")
        assert comparison["deltas"] == read_json(
            callback_run.run_dir / "report" / "adapter-vs-base.json")["deltas"]
    base = read_jsonl(sweep / "eval" / "base" / "generations.en.jsonl")
    assert all(row["cached"] for row in base)


@pytest.mark.slow
def test_the_stop_rule_stops_training_with_its_evidence(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    callback = SommelierCallback(
        suite, out=tmp_path / "runs", store=tmp_path / "store", cache_dir=tmp_path / "cache",
        stop_when="no_improvement:full_call_exact_match:1", quiet=True,
    )
    trainer = train(model_dir, tmp_path / "out", callback, attach=False)
    # the tiny random model never produces a full call: no checkpoint beats the first
    assert [r.step for r in callback.results] == [2, 4]
    assert trainer.state.global_step == 4
    assert "no gain (1 of 1); stopping" in callback.results[-1].line
    logged = [e for e in trainer.state.log_history if "sommelier/stop" in e]  # appended
    assert [e["sommelier/stop"] for e in logged] == [0.0, 1.0]


@pytest.mark.slow
def test_a_failing_gate_is_in_log_history_and_stops_training(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    gates = [{"name": "parses", "arm": "adapter", "metric": "valid_json_rate", "min": 0.99},
             {"name": "any", "arm": "adapter", "metric": "valid_json_rate", "min": 0.0}]
    suite = training_suite(tmp_path, model_dir, arms={"base": {}, "adapter": {}}, gates=gates)
    callback = SommelierCallback(
        suite, out=tmp_path / "runs", store=tmp_path / "store", cache_dir=tmp_path / "cache",
        stop_when="gate_fail:parses", quiet=True,
    )
    trainer = train(model_dir, tmp_path / "out", callback)
    # the tiny random model writes no JSON: the first checkpoint fails `parses` and stops
    assert [r.step for r in callback.results] == [2]
    assert trainer.state.global_step == 2
    result = callback.results[0]
    assert result.verdict == "fail" and result.gates == {"parses": False, "any": True}
    assert "gate 'parses' failed; stopping" in result.line
    verdict = read_json(result.run_dir / "gate_verdict.json")
    assert verdict["verdict"] == result.verdict
    logged = [e for e in trainer.state.log_history if "sommelier/verdict" in e]
    assert len(logged) == 1 and logged[0]["step"] == 2
    assert logged[0]["sommelier/verdict"] == 0.0 and logged[0]["sommelier/stop"] == 1.0
    assert logged[0]["sommelier/gate/parses"] == 0.0 and logged[0]["sommelier/gate/any"] == 1.0


@pytest.mark.slow
def test_gate_fail_naming_no_gate_of_the_suite_fails_before_any_step(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    callback = SommelierCallback(suite, out=tmp_path / "runs", store=tmp_path / "store",
                                 stop_when="gate_fail:nope", quiet=True)
    with pytest.raises(InputError) as caught:
        train(model_dir, tmp_path / "out", callback)
    assert "SOM-TRAIN-OPTION" in str(caught.value) and "'nope'" in str(caught.value)
    assert not list((tmp_path / "out").glob("checkpoint-*"))


@pytest.mark.slow
def test_a_resumed_trainer_continues_vs_previous_and_patience(
    tiny: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from transformers import Trainer, TrainingArguments

    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)

    def run(steps: int, resume: str | None) -> tuple[Any, Any]:
        callback = SommelierCallback(
            suite, out=tmp_path / "runs", store=tmp_path / "store", cache_dir=tmp_path / "cache",
            stop_when="no_improvement:full_call_exact_match:2",
        )  # fmt: skip
        args = TrainingArguments(
            output_dir=str(tmp_path / "out"), max_steps=steps, save_strategy="steps",
            save_steps=SAVE_EVERY, per_device_train_batch_size=2, learning_rate=5e-2,
            logging_steps=1, use_cpu=True, report_to="none", disable_tqdm=True, seed=0,
        )  # fmt: skip
        trainer = Trainer(model=lora_model(model_dir), args=args, train_dataset=dataset(model_dir))
        callback.attach(trainer)
        trainer.train(resume_from_checkpoint=resume)
        return callback, trainer

    first, _ = run(4, None)  # steps 2 (the first, the best) and 4 (no gain, 1 of 2)
    assert "no gain (1 of 2)" in first.results[-1].line
    capsys.readouterr()
    second, trainer = run(8, str(tmp_path / "out" / "checkpoint-4"))
    out = capsys.readouterr().out
    assert "resumed at step 4: 2 evaluated checkpoint(s) read back" in out
    # step 6 is compared with step 4 (vs previous) and counts on from 1: the rule stops there
    assert [r.step for r in second.results] == [6]
    line = second.results[0].line
    assert "vs previous" in line and "vs best step 2" in line
    assert line.endswith("no gain (2 of 2); stopping") and trainer.state.global_step == 6
    assert "step 6 is the first" not in line
    # log_history is the checkpoint's (its step 2 entry) and then the resumed run's
    logged = [e for e in trainer.state.log_history if "sommelier/stop" in e and e["step"] > 4]
    assert [e["step"] for e in logged] == [6] and logged[0]["sommelier/stop"] == 1.0
    assert "sommelier/adapter-vs-previous/full_call_exact_match/delta" in logged[0]


@pytest.mark.slow
def test_max_examples_draws_the_sample_the_pytest_option_draws(
    tiny: tuple[Path, Path], tmp_path: Path, pytester: pytest.Pytester
) -> None:
    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    callback = SommelierCallback(
        suite, out=tmp_path / "runs", store=tmp_path / "store", cache_dir=tmp_path / "cache",
        max_examples=2, seed=3, quiet=True,
    )
    train(model_dir, tmp_path / "out", callback, steps=2)
    (result,) = callback.results
    ours = read_json(result.run_dir / "suite.resolved.json")["test_split"]
    assert ours["sample"]["roots"] == 2 and ours["sample"]["seed"] == 3
    training_suite(pytester.path, model_dir)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sommelier-out", "s",
                                        "--sommelier-sample", "2:3")
    assert run.ret == 0
    theirs = read_json(pytester.path / "s" / "suite.resolved.json")["test_split"]
    assert theirs["sha256"] == ours["sha256"] and theirs["sample"] == ours["sample"]


@pytest.mark.slow
def test_the_history_page_draws_the_checkpoints_as_a_curve(trained: dict[str, Any]) -> None:
    from pytest_sommelier.commands.history import write_page
    from pytest_sommelier.data.store.history_runs import history_runs
    from pytest_sommelier.view.history_page import build_history_context

    store = trained["root"] / "store"
    runs = history_runs(store)
    context = build_history_context(store, store / "history.html", runs)
    (group,) = context["groups"]
    curve = group["curve"]
    # one training run (one Trainer.train(): the id the callback records), one line per metric
    assert len({r["training"]["run"] for r in runs}) == 1
    assert [line["name"] for line in curve["lines"]] == ["T1"]
    assert [r["training"]["loss"] is not None for r in runs] == [True, True, True]
    chart = curve["charts"][0]
    assert chart["slice"] == "overall" and [x["label"] for x in chart["xs"]] == ["2", "4", "6"]
    assert [s["metric"] for s in chart["series"]][:2] == ["valid_json_rate",
                                                          "function_name_accuracy"]
    assert all(len(s["points"]) == 3 for s in chart["series"])
    assert all("y1" in p for s in chart["series"] for p in s["points"])  # intervals drawn
    (selected,) = chart["selected"]
    assert selected["step"] == 2  # every checkpoint ties at 0: the first
    xs = [p["x"] for p in chart["series"][0]["points"]]
    assert xs == sorted(xs) and xs[1] - xs[0] == pytest.approx(xs[2] - xs[1])  # step scale
    assert [r["name"] for r in curve["references"]] == ["base"]  # the base arm's value
    assert curve["loss"] is not None
    html = write_page(store).read_text()
    assert 'data-curve="checkpoints"' in html and "T1 selected: step 2" in html


@pytest.mark.slow
def test_every_n_steps_saves_the_adapter_and_evaluates_it(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    from transformers import Trainer, TrainingArguments

    from pytest_sommelier.data.digests import sha256_path
    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    callback = SommelierCallback(suite, every=2, out=tmp_path / "runs", store=tmp_path / "store",
                                 cache_dir=tmp_path / "cache", quiet=True)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=4, save_strategy="no",
                             per_device_train_batch_size=2, learning_rate=5e-2, use_cpu=True,
                             report_to="none", disable_tqdm=True, seed=0)
    trainer = Trainer(model=lora_model(model_dir), args=args, train_dataset=dataset(model_dir))
    callback.attach(trainer)
    trainer.train()
    assert [r.step for r in callback.results] == [2, 4]
    assert [r.folder for r in callback.results] == [
        tmp_path / "runs" / "adapters" / "step-2", tmp_path / "runs" / "adapters" / "step-4"
    ]
    for result in callback.results:
        report = read_json(result.run_dir / "eval" / "adapter" / "evaluation_report.json")
        assert report["adapter_identity"]["sha256"] == sha256_path(result.folder)
    assert not list((tmp_path / "out").glob("checkpoint-*"))


@pytest.mark.slow
def test_trl_sft_trainer_with_the_callback(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    data = datasets.Dataset.from_list(
        [{"prompt": f"<|im_start|>user\nweather {i}<|im_end|>\n",
          "completion": '{"name": "w", "arguments": {}}<|im_end|>'} for i in range(8)]
    )
    config = SFTConfig(output_dir=str(tmp_path / "out"), max_steps=2, save_strategy="steps",
                       save_steps=2, per_device_train_batch_size=2, use_cpu=True,
                       report_to="none", disable_tqdm=True, max_length=64)
    trainer = SFTTrainer(model=lora_model(model_dir), args=config, train_dataset=data,
                         processing_class=AutoTokenizer.from_pretrained(model_dir))
    callback = SommelierCallback(suite, out=tmp_path / "runs", store=tmp_path / "store",
                                 cache_dir=tmp_path / "cache", quiet=True)
    callback.attach(trainer)
    trainer.train()
    entries = [e for e in trainer.state.log_history if "sommelier/adapter/valid_json_rate" in e]
    assert [e["step"] for e in entries] == [2]
    assert [r.folder.name for r in callback.results] == ["checkpoint-2"]


@pytest.mark.slow
def test_every_evaluate_adds_the_numbers_to_the_evaluation_metrics(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    from transformers import Trainer, TrainingArguments

    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    callback = SommelierCallback(suite, every="evaluate", out=tmp_path / "runs",
                                 store=tmp_path / "store", cache_dir=tmp_path / "cache",
                                 quiet=True)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=2, save_strategy="no",
                             eval_strategy="steps", eval_steps=2, per_device_train_batch_size=2,
                             per_device_eval_batch_size=2, use_cpu=True, report_to="none",
                             disable_tqdm=True, seed=0)
    data = dataset(model_dir)
    trainer = Trainer(model=lora_model(model_dir), args=args, train_dataset=data,
                      eval_dataset=data[:2])
    callback.attach(trainer)
    trainer.train()
    assert [r.step for r in callback.results] == [2]
    metrics = trainer.evaluate()  # a second evaluation at the same step is not re-run: it
    # gives that step's numbers again (so metric_for_best_model always finds them)
    value = callback.results[0].numbers["sommelier/adapter/valid_json_rate"]
    assert metrics["eval_sommelier/adapter/valid_json_rate"] == value
    assert len(callback.results) == 1
    logged = [e for e in trainer.state.log_history if "sommelier/adapter/argument_f1" in e]
    assert [e["step"] for e in logged] == [2]


# -- checkpoints against the shipped adapter (a stored run) ---------------------------------


STORED_GATES = [
    {"name": "vs-shipped", "arm": "adapter", "stored": "label:shipped",
     "metric": "full_call_exact_match", "ci_lower_at_least": -1.0},
    {"name": "vs-last", "arm": "adapter", "stored": "last",
     "metric": "valid_json_rate", "ci_lower_at_least": -1.0},
]  # fmt: skip


def store_shipped(
    pytester: pytest.Pytester, model_dir: Path, adapter: Path, cache: Path, *, gates: Any = None
) -> Path:
    """``pytest -m eval`` of ``adapter`` stored as ``--sommelier-label shipped``; then the
    suite rewritten with ``gates`` (the callback's suite: same folder, same conditions)."""
    arms = {"base": {}, "adapter": {"adapter": str(adapter)}}
    training_suite(pytester.path, model_dir, arms=arms)
    store = pytester.path / "store"
    run = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--sommelier-out", "shipped", "--sommelier-autosave",
        "--sommelier-label", "shipped", "--sommelier-storage", str(store),
        "--sommelier-cache-dir", str(cache),
    )  # fmt: skip
    assert run.ret == 0, run.stdout.str()[-3000:]
    return training_suite(pytester.path, model_dir, arms=arms, gates=gates or STORED_GATES)


@pytest.mark.slow
def test_each_checkpoint_is_judged_against_the_shipped_adapters_stored_run(
    trained: dict[str, Any], pytester: pytest.Pytester
) -> None:
    from pytest_sommelier.training import SommelierCallback

    root, model_dir = trained["root"], trained["model_dir"]
    shipped = root / "out" / "checkpoint-2"  # what an earlier training run shipped
    suite = store_shipped(pytester, model_dir, shipped, root / "cache")
    store = pytester.path / "store"
    callback = SommelierCallback(suite, out=pytester.path / "runs", store=store,
                                 cache_dir=root / "cache", quiet=True)
    trainer = train(model_dir, pytester.path / "out", callback)
    assert [r.step for r in callback.results] == [2, 4, 6]
    index = read_json(store / "index.json")["runs"]
    assert [e.get("label") for e in index] == ["shipped", None, None, None]
    for result in callback.results:
        verdict = read_json(result.run_dir / "gate_verdict.json")
        gates = {g["subject"]: g for g in verdict["gates"]}
        assert gates["adapter-vs-adapter@label:shipped"]["passed"] is True
        assert gates["adapter-vs-adapter@last"]["passed"] is True
        assert verdict["verdict"] == "pass"  # so each checkpoint would be `last` unpinned
        # both specs name the shipped run (last is pinned at on_train_begin): compared once
        compares = sorted(p.name for p in (result.run_dir / "report").glob("compare-*.json"))
        assert compares == ["compare-0001.json"]
        assert "adapter-vs-adapter@label:shipped" in result.line
    # checkpoint-2 of this training holds the shipped adapter's weights (same seed, same steps;
    # its folder digest differs: the trainer state logged other numbers)
    weights = "adapter_model.safetensors"
    assert (pytester.path / "out" / "checkpoint-2" / weights).read_bytes() == (
        shipped / weights
    ).read_bytes()
    first = read_json(callback.results[0].run_dir / "report" / "compare-0001.json")
    block = first["arms"]["adapter"]
    assert block["status"] == "compared"
    assert block["identical_outputs"] == block["compared_examples"] == len(IDS)
    later = read_json(callback.results[2].run_dir / "report" / "compare-0001.json")
    assert later["arms"]["adapter"]["adapter_changed"] is True
    logged = [e for e in trainer.state.log_history
              if "sommelier/adapter/full_call_exact_match" in e]  # fmt: skip
    key = "sommelier/adapter-vs-adapter@label:shipped/full_call_exact_match"
    assert all(f"{key}/delta" in e and f"{key}/lower" in e for e in logged)
    assert logged[0][f"{key}/delta"] == 0.0
    assert all("sommelier/adapter-vs-adapter@last/valid_json_rate/delta" in e for e in logged)


@pytest.mark.slow
def test_a_sampled_checkpoint_is_refused_by_the_full_shipped_run_with_the_field_named(
    trained: dict[str, Any], pytester: pytest.Pytester
) -> None:
    from pytest_sommelier.training import SommelierCallback

    root, model_dir = trained["root"], trained["model_dir"]
    suite = store_shipped(pytester, model_dir, root / "out" / "checkpoint-2", root / "cache",
                          gates=STORED_GATES[:1])  # fmt: skip
    callback = SommelierCallback(suite, out=pytester.path / "runs", store=pytester.path / "store",
                                 cache_dir=root / "cache", quiet=True, max_examples=2)
    trainer = train(model_dir, pytester.path / "out", callback, steps=2)
    (result,) = callback.results
    verdict = read_json(result.run_dir / "gate_verdict.json")
    (gate,) = verdict["gates"]
    assert gate["passed"] is False and verdict["verdict"] == "fail"
    assert "SOM-COMPARE-IDENTITY" in gate["reason"] and "test_split" in gate["reason"]
    assert "adapter-vs-adapter@label:shipped refused: SOM-COMPARE-IDENTITY" in result.line
    assert f"... (whole reason: {result.run_dir / 'gate_verdict.json'})" in result.line
    assert len(result.line) < 600  # bounded: the whole reason is in gate_verdict.json
    (logged,) = [e for e in trainer.state.log_history if "sommelier/adapter/argument_f1" in e]
    assert not any("@label:shipped" in key for key in logged)


@pytest.mark.slow
def test_a_stored_gate_naming_no_stored_run_fails_before_any_step(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    for gates in (STORED_GATES[:1], STORED_GATES[1:]):
        folder = tmp_path / gates[0]["name"]
        suite = training_suite(folder, model_dir, arms={"base": {}, "adapter": {}}, gates=gates)
        callback = SommelierCallback(suite, out=folder / "runs", store=folder / "store")
        with pytest.raises(InputError) as caught:
            train(model_dir, folder / "out", callback)
        assert caught.value.code == "SOM-TRAIN-STORED" and "\n" not in str(caught.value)
        assert repr(gates[0]["stored"]) in str(caught.value)
        assert not list((folder / "out").glob("checkpoint-*"))


def test_a_second_adapter_arm_points_to_the_stored_run_way(tmp_path: Path) -> None:
    from pytest_sommelier.data.suite.load import load_suite
    from pytest_sommelier.training.callback import evaluation_suite

    suite_file = write_suite(tmp_path / "suite", rows=rows(IDS),
                             arms={"base": {}, "adapter": {"adapter": "adapter"},
                                   "shipped": {"adapter": "adapter"}})  # fmt: skip
    with pytest.raises(InputError) as caught:
        evaluation_suite(load_suite(suite_file), "adapter", None)
    assert caught.value.code == "SOM-TRAIN-ARMS" and "'shipped'" in str(caught.value)
    assert 'stored = "label:shipped"' in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.slow
def test_a_model_of_another_base_is_refused_before_any_step(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    from tiny import make_tiny_model_dir

    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    suite = training_suite(tmp_path, model_dir)
    other = make_tiny_model_dir(tmp_path / "other", hidden_size=48)
    callback = SommelierCallback(suite, out=tmp_path / "runs", store=tmp_path / "store")
    with pytest.raises(InputError) as caught:
        train(other, tmp_path / "out", callback)  # the suite's base is the 32-wide model
    assert caught.value.code == "SOM-TRAIN-BASE" and "\n" not in str(caught.value)
    assert "hidden_size is 32 in the base, 48 in the model" in str(caught.value)
    assert not list((tmp_path / "out").glob("checkpoint-*"))
    # the check can be switched off (the model then evaluates, whatever its base)
    unchecked = SommelierCallback(suite, out=tmp_path / "runs2", store=tmp_path / "store2",
                                  cache_dir=None, check_base=False, quiet=True)
    train(other, tmp_path / "out2", unchecked, steps=2)
    assert [r.step for r in unchecked.results] == [2]
