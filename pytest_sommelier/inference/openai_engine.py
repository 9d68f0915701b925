"""The ``openai`` engine: any OpenAI-compatible server's ``/v1/completions``, standard library only.

``load_generators(engine, model, arms, suite_dir=...)`` checks the server once (``GET /models``
must list every served name the suite uses, and ``/version`` is recorded where the server has
one), then returns one generator per arm. ``generate(prompts, decoding)`` sends one completion
request per prompt through a bounded pool of ``concurrency`` requests, with the model set to the
arm's ``served_name``, the prompt as the base tokenizer's token ids (``prompt_format =
"token_ids"``, the default) or as the stored text (``"text"``), and greedy parameters sent
explicitly (``temperature 0``, ``top_p 1``, ``n 1``, ``max_tokens``, a fixed ``seed``).

Invariants kept here:

- a missing served name is a setup error naming it; nothing ever falls back to another model,
  and a response that names another model than the one asked for is an error;
- only connection errors, 429 and 5xx are retried, at most ``max_retries`` times with a bounded
  backoff; a request still failing (or not answered within ``request_timeout_s``) fails the
  whole batch, and no output of that batch is returned;
- outputs come back in input order whatever order the responses arrive in, each with the
  server's ``finish_reason`` (``stop``/``length``; anything else ``unknown``) and its number of
  new tokens (the returned token ids, else ``usage.completion_tokens``, else unknown);
- the API key is read from the environment variable *named* by ``api_key_env`` and is sent only
  in the ``Authorization`` header: it never enters an identity, an artifact or an error message
  (any server text quoted in an error has it masked); a ``base_url`` holding credentials is
  refused.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pytest_sommelier.core.types import (
    ArmConfig,
    Completion,
    DeviceInfo,
    EngineConfig,
    ModelConfig,
)
from pytest_sommelier.data.json_input import strict_json
from pytest_sommelier.errors import (
    EvaluationError,
    InputError,
    InvariantError,
    SommelierEnvironmentError,
)
from pytest_sommelier.inference import engines
from pytest_sommelier.registry import OPENAI

ENGINE = OPENAI
GREEDY_SEED = 0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_BACKOFF_S = 8.0
SNIPPET = 200


class _Retryable(Exception):
    """One attempt failed in a way that is safe to retry (connection error, 429, 5xx)."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def check_base_url(url: str | None) -> str:
    """An ``http(s)://host[:port]/path`` URL without credentials, trailing slash removed."""
    if not url:
        raise InputError(
            "SOM-OPENAI-URL",
            "the openai engine needs engine.base_url",
            'set base_url, e.g. base_url = "http://127.0.0.1:8000/v1"',
            where="engine.base_url",
        )
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(
            "SOM-OPENAI-URL",
            f"engine.base_url {url!r} is not an http(s) URL with a host",
            "write e.g. http://127.0.0.1:8000/v1",
            where="engine.base_url",
        )
    if parts.username or parts.password:
        raise InputError(
            "SOM-OPENAI-URL",
            "engine.base_url holds credentials (user:password@); they would reach the reports",
            "remove them from the URL and name an environment variable in engine.api_key_env",
            where="engine.base_url",
        )
    if parts.query or parts.fragment:
        raise InputError(
            "SOM-OPENAI-URL",
            "engine.base_url must not have a query or a fragment",
            "write the server's API root, e.g. http://127.0.0.1:8000/v1",
            where="engine.base_url",
        )
    return url.rstrip("/")


def read_api_key(api_key_env: str | None) -> str | None:
    """The key held by the environment variable named ``api_key_env`` (None when not named)."""
    if not api_key_env:
        return None
    value = os.environ.get(api_key_env, "")
    if not value.strip():
        raise SommelierEnvironmentError(
            "SOM-OPENAI-KEY",
            f"engine.api_key_env names the environment variable {api_key_env!r}, "
            "which is not set or empty",
            f"export {api_key_env}=<your key> before running, or remove engine.api_key_env",
            where="engine.api_key_env",
        )
    return value.strip()


@dataclass
class OpenAIServer:
    """A client for one server: bounded retries, a timeout per request, a secret kept secret."""

    base_url: str
    api_key: str | None = field(default=None, repr=False)
    request_timeout_s: float = 300.0
    max_retries: int = 3
    concurrency: int = 16
    backoff_s: float = 0.5
    sleep: Callable[[float], None] = time.sleep
    requests_sent: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # -- one request ----------------------------------------------------------------------------

    def _mask(self, text: str) -> str:
        """``text`` with the API key (if any) replaced, cut to a short one-line snippet."""
        if self.api_key:
            text = text.replace(self.api_key, "***")
        return " ".join(text.split())[:SNIPPET]

    def _url(self, path: str) -> str:
        if path.startswith("/"):  # relative to the server root (e.g. /version)
            parts = urllib.parse.urlsplit(self.base_url)
            return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))
        return f"{self.base_url}/{path}"

    def _attempt(self, method: str, path: str, body: Mapping[str, Any] | None) -> Any:
        """One HTTP exchange; returns the decoded JSON body. Raises ``_Retryable`` for what may
        be retried, EvaluationError for what may not."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self._url(path), data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.api_key:
            request.add_header("Authorization", f"Bearer {self.api_key}")
        with self._lock:
            self.requests_sent += 1
        try:
            with urllib.request.urlopen(request, timeout=self.request_timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = self._mask(_read_error_body(exc))
            if exc.code in RETRY_STATUSES:
                raise _Retryable(
                    f"HTTP {exc.code} {detail}".strip(), _retry_after(exc.headers)
                ) from None
            raise EvaluationError(
                "SOM-OPENAI-HTTP",
                f"{method} {path} answered HTTP {exc.code}: {detail or exc.reason}",
                _hint_for_status(exc.code, path),
                where=self.base_url,
            ) from None
        except TimeoutError as exc:
            raise EvaluationError(
                "SOM-OPENAI-TIMEOUT",
                f"{method} {path}: no response within request_timeout_s = "
                f"{self.request_timeout_s:g} s",
                "raise engine.request_timeout_s, or find why the server hangs",
                where=self.base_url,
            ) from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError | socket.timeout):
                raise EvaluationError(
                    "SOM-OPENAI-TIMEOUT",
                    f"{method} {path}: no connection within request_timeout_s = "
                    f"{self.request_timeout_s:g} s",
                    "check that the server is up and reachable",
                    where=self.base_url,
                ) from None
            raise _Retryable(f"connection error: {self._mask(str(exc.reason))}") from None
        except (http.client.HTTPException, ConnectionError, OSError) as exc:
            raise _Retryable(f"connection error: {type(exc).__name__}") from None
        try:
            return strict_json(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise EvaluationError(
                "SOM-OPENAI-RESPONSE",
                f"{method} {path} answered with a body that is not JSON: "
                f"{self._mask(raw[:SNIPPET].decode('utf-8', 'replace'))!r}",
                "check that base_url points at an OpenAI-compatible API root (…/v1)",
                where=self.base_url,
            ) from None

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """One request with up to ``max_retries`` retries on connection errors, 429 and 5xx,
        waiting ``backoff_s * 2**attempt`` (or the server's Retry-After) capped at 8 s."""
        attempt = 0
        while True:
            try:
                return self._attempt(method, path, body)
            except _Retryable as failure:
                if attempt >= self.max_retries:
                    raise EvaluationError(
                        "SOM-OPENAI-RETRIES",
                        f"{method} {path} still failing after {attempt + 1} attempt(s): "
                        f"{failure.reason}",
                        "check the server's health and load; raise engine.max_retries or lower "
                        "engine.concurrency",
                        where=self.base_url,
                    ) from None
                delay = self.backoff_s * (2**attempt) * (1 + 0.25 * random.random())
                if failure.retry_after is not None:
                    delay = max(delay, failure.retry_after)
                self.sleep(min(delay, MAX_BACKOFF_S))
                attempt += 1

    # -- the server's facts ---------------------------------------------------------------------

    def served_models(self) -> list[str]:
        """The model ids ``GET /models`` lists (sorted)."""
        body = self.request("GET", "models")
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or not all(
            isinstance(entry, dict) and isinstance(entry.get("id"), str) for entry in data
        ):
            raise EvaluationError(
                "SOM-OPENAI-RESPONSE",
                'GET /models did not answer {"data": [{"id": ...}, ...]}',
                "check that base_url points at an OpenAI-compatible API root (…/v1)",
                where=self.base_url,
            )
        return sorted(entry["id"] for entry in data)

    def version(self) -> str | None:
        """The server's ``/version`` (vLLM and SGLang have one), or None where it has none."""
        try:
            body = self._attempt("GET", "/version", None)
        except (EvaluationError, _Retryable):
            return None
        if isinstance(body, dict) and isinstance(body.get("version"), str):
            return body["version"]
        return None

    # -- completions ----------------------------------------------------------------------------

    def complete(
        self, served_name: str, prompt: list[int] | str, max_tokens: int
    ) -> Answer:
        """One greedy completion of ``prompt`` by ``served_name``: the text of its one choice,
        where the server returns them (vLLM's ``return_token_ids``) its new token ids, its
        finish reason and the completion's token count."""
        body: dict[str, Any] = {
            "model": served_name,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "top_p": 1.0,
            "n": 1,
            "seed": GREEDY_SEED,
            "stream": False,
        }
        if isinstance(prompt, str):
            body["add_special_tokens"] = False  # vLLM/SGLang: the prompt is a rendered template
        else:
            body["return_token_ids"] = True  # vLLM: decode locally, by the transformers rule
        answer = self.request("POST", "completions", body)
        choices = answer.get("choices") if isinstance(answer, dict) else None
        reasoning = _reasoning_content(choices)
        if (
            isinstance(choices, list)
            and len(choices) == 1
            and isinstance(choices[0], dict)
            and choices[0].get("text") is None
            and reasoning is not None
        ):
            choices = [{**choices[0], "text": ""}]  # reasoning only: no content came
            has_content = False
        else:
            has_content = True
        if (
            not isinstance(choices, list)
            or len(choices) != 1
            or not isinstance(choices[0], dict)
            or not isinstance(choices[0].get("text"), str)
        ):
            raise EvaluationError(
                "SOM-OPENAI-RESPONSE",
                f"POST /completions for {served_name!r} did not answer exactly one choice "
                "with a text",
                "check the server; n=1 was asked",
                where=self.base_url,
            )
        answered = answer.get("model")
        if isinstance(answered, str) and answered != served_name:
            raise EvaluationError(
                "SOM-OPENAI-WRONG-MODEL",
                f"asked model {served_name!r}, the server answered as {answered!r}",
                "a router or server substituted the model; fix its routing, nothing was scored",
                where=self.base_url,
            )
        ids = choices[0].get("token_ids")
        valid = isinstance(ids, list) and all(_is_count(i) for i in ids)
        usage = answer.get("usage")
        used = usage.get("completion_tokens") if isinstance(usage, dict) else None
        counted = len(ids) if valid and isinstance(ids, list) else None
        tokens = counted if counted is not None else (used if _is_count(used) else None)
        return Answer(
            choices[0]["text"],
            ids if valid else None,
            engines.server_finish(choices[0].get("finish_reason")),
            tokens,
            reasoning,
            has_content,
        )

    def complete_all(
        self, served_name: str, prompts: Sequence[list[int] | str], max_tokens: int
    ) -> list[Answer]:
        """Every prompt's completion, in input order, at most ``concurrency`` in flight; the
        first failure cancels what has not started and is raised (no partial list)."""
        if not prompts:
            return []
        outputs: list[Answer | None] = [None] * len(prompts)
        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(prompts)))) as pool:
            futures = {
                pool.submit(self.complete, served_name, prompt, max_tokens): index
                for index, prompt in enumerate(prompts)
            }
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            for future in pending:
                future.cancel()
            for future in done:
                if future.exception() is not None:
                    for other in pending:
                        other.cancel()
                    raise future.exception()  # type: ignore[misc]
            for future, index in futures.items():
                outputs[index] = future.result()
        return [output for output in outputs if output is not None]


class Answer(NamedTuple):
    """One completion as the server answered it (``token_ids`` only where it returns them)."""

    text: str
    token_ids: list[int] | None
    finish_reason: str
    generated_tokens: int | None
    reasoning: str | None = None  # the choice's reasoning_content (a reasoning parser's)
    has_content: bool = True  # False: reasoning came with a null text (it never ended)


def _reasoning_content(choices: Any) -> str | None:
    """The one choice's ``reasoning_content`` (``reasoning``, vLLM's newer name) when the
    server split it off the text (a reasoning parser), else None; a value that is not a string
    is read as none. Recorded only under ``[parser] reasoning = "engine"`` (core.reasoning)."""
    if not isinstance(choices, list) or len(choices) != 1 or not isinstance(choices[0], dict):
        return None
    for key in ("reasoning_content", "reasoning"):
        value = choices[0].get(key)
        if isinstance(value, str):
            return value
    return None


def _is_count(value: object) -> bool:
    """An int that is not a bool (JSON numbers a server sends as token ids or counts)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _read_error_body(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read()[: SNIPPET * 4].decode("utf-8", "replace")
    except Exception:
        return ""


def _retry_after(headers: Any) -> float | None:
    try:
        value = float(headers.get("Retry-After")) if headers is not None else None
    except (TypeError, ValueError):
        return None
    return None if value is None or value < 0 else value


def _hint_for_status(status: int, path: str) -> str:
    if status in (401, 403):
        return "the server refused the credentials: check the variable named by engine.api_key_env"
    if status == 404 and path == "completions":
        return "the server has no /completions endpoint under base_url; check base_url (…/v1)"
    if status in (400, 422) and path == "completions":
        return (
            "the server refused the request; if it refuses token-id prompts, set "
            'engine.prompt_format = "text"'
        )
    return "check the server's log"


# --------------------------------------------------------------------------- generators


@dataclass
class OpenAIGenerator:
    """One arm served by an OpenAI-compatible server under ``served_name``."""

    name: str
    served_name: str
    model_identity: dict[str, Any]
    adapter_identity: dict[str, Any] | None
    server: OpenAIServer
    prompt_format: str
    tokenizer: Callable[[], Any]

    def device_info(self) -> DeviceInfo:
        """The device is the server's, unknown from here: recorded as ``server``."""
        return {"device": "server", "device_count": 1}

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the base's tokenizer (a reasoning span's length)."""
        return engines.count_text_tokens(self.tokenizer(), text)

    def generate(self, prompts: list[str], decoding: dict[str, Any]) -> list[str]:
        """Greedy completions, one per prompt, in input order (the whole list is one batch)."""
        return [completion.text for completion in self.generate_completions(prompts, decoding)]

    def generate_completions(
        self, prompts: list[str], decoding: dict[str, Any]
    ) -> list[Completion]:
        """:meth:`generate` with the server's finish reason and token count of each."""
        max_tokens = engines.decoding_settings(decoding, self.name).max_new_tokens
        if self.prompt_format == "token_ids":
            payload: list[Any] = engines.prompt_token_ids(self.tokenizer(), prompts, self.name)
        else:
            payload = list(engines.check_prompts(prompts, self.name))
        answers = self.server.complete_all(self.served_name, payload, max_tokens)
        outputs = [
            Completion(
                answer.text
                if answer.token_ids is None or answer.reasoning is not None  # content only
                else engines.decode_new_tokens(self.tokenizer(), answer.token_ids),
                answer.finish_reason,
                answer.generated_tokens,
                answer.reasoning,
                answer.has_content,
            )
            for answer in answers
        ]
        if len(outputs) != len(prompts):
            raise InvariantError(
                "SOM-BACKEND-COUNT",
                f"the server returned {len(outputs)} completions for {len(prompts)} prompts",
                "report this as a bug",
                where=f"arm {self.name}",
            )
        return outputs


def served_names(model: ModelConfig, arms: Mapping[str, ArmConfig]) -> dict[str, str]:
    """arm -> the name the server serves it under (adapter arms: their own; base arm: the
    base's); a missing one is an input error naming the key."""
    names: dict[str, str] = {}
    for key, arm in arms.items():
        if arm.adapter is None:
            name, where = model.served_name, "model.served_name"
        else:
            name, where = arm.served_name, f"arms.{key}.served_name"
        if not name:
            raise InputError(
                "SOM-OPENAI-SERVED-NAME",
                f"the openai engine needs {where}: the name the server serves "
                f"{'the base' if arm.adapter is None else f'arm {key!r}'} under",
                f"set {where} to an id listed by GET <base_url>/models",
                where=where,
            )
        names[key] = name
    return names


def load_generators(
    engine: EngineConfig,
    model: ModelConfig,
    arms: Mapping[str, ArmConfig],
    *,
    suite_dir: Path,
    worker_index: int = 0,
) -> dict[str, OpenAIGenerator]:
    """One generator per arm after checking the server lists every served name; identities are
    the local references' digests plus the server's facts (no weights, no tokenizer loaded)."""
    del worker_index  # the server schedules; every worker talks to the same one
    if engine.prompt_format not in engines.PROMPT_FORMATS:
        raise InputError(
            "SOM-OPENAI-PROMPT-FORMAT",
            f"engine.prompt_format {engine.prompt_format!r} is not one of "
            f"{', '.join(engines.PROMPT_FORMATS)}",
            "use token_ids (the default) or text",
            where="engine.prompt_format",
        )
    url = check_base_url(engine.base_url)
    names = served_names(model, arms)
    base = engines.base_ref(model, Path(suite_dir))
    adapters = engines.adapter_refs(arms, Path(suite_dir))
    server = OpenAIServer(
        url,
        read_api_key(engine.api_key_env),
        request_timeout_s=float(engine.request_timeout_s),
        max_retries=int(engine.max_retries),
        concurrency=int(engine.concurrency),
    )
    listed = server.served_models()
    missing = [f"{name!r} ({_key(arms, arm)})" for arm, name in names.items() if name not in listed]
    if missing:
        raise SommelierEnvironmentError(
            "SOM-OPENAI-MODEL-MISSING",
            f"the server at {url} does not serve {', '.join(missing)}; it serves: "
            f"{', '.join(listed) or 'nothing'}",
            "start the server with that name (vLLM: --served-model-name / --lora-modules "
            "NAME=PATH) or fix the served_name; nothing falls back to another model",
            where="engine.base_url",
        )
    identity = {
        **base.identity,
        "engine": {
            "name": ENGINE,
            "server_version": server.version(),
            "served_models": listed,
            "base_served_name": model.served_name,
            "prompt_input": engine.prompt_format,
        },
    }
    tokenizer_box: dict[str, Any] = {}
    lock = threading.Lock()

    def tokenizer() -> Any:
        with lock:
            if "t" not in tokenizer_box:
                tokenizer_box["t"] = engines.load_engine_tokenizer(base.source, Path(suite_dir))
            return tokenizer_box["t"]

    generators: dict[str, OpenAIGenerator] = {}
    for key, ref in adapters.items():
        adapter_identity = (
            None if ref.identity is None else {**ref.identity, "served_name": names[key]}
        )
        generators[key] = OpenAIGenerator(
            key,
            names[key],
            dict(identity),
            adapter_identity,
            server,
            engine.prompt_format,
            tokenizer,
        )
    return generators


def _key(arms: Mapping[str, ArmConfig], arm: str) -> str:
    return "model.served_name" if arms[arm].adapter is None else f"arms.{arm}.served_name"
