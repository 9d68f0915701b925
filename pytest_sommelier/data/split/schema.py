"""JSON Schema checks of the input files: the schemas, the one most useful violation, and what
it is about.

The suite loader (``sommelier.toml`` against ``schemas/suite.schema.json``) and the split loader
(each line against ``schemas/formatted_example.v3.schema.json``, or v2's for a v2 row) both
call :func:`violation`; each then words the :class:`Violation` in its own terms (TOML tables
and keys, JSON fields) and codes (``SOM-SUITE-*``, ``SOM-SPLIT-*``).

Invariants kept: a schema file is read, checked and compiled once per process (also into a plain
check of the few keywords the formatted-example schema uses, :func:`compiled_check`, which
answers valid exactly when jsonschema does); the violation
reported for an invalid instance is a function of the instance alone (unknown keys first, then
missing keys, then types, then other rules; shallow before deep; ties by path).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote

import jsonschema

from pytest_sommelier.data.json_input import FIELD_DEPTH_LIMIT, depth_problem
from pytest_sommelier.data.json_memo import JsonMemo

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
SUITE_SCHEMA_FILE = SCHEMAS / "suite.schema.json"
EXAMPLE_SCHEMA_FILE = SCHEMAS / "formatted_example.v2.schema.json"
SCHEMA_VERSION = "sommelier.formatted_example.v2"
"""The ``schema_version`` of a formatted example rendered without template options: what
``sommelier format`` writes then (every split before 0.5 is byte-identical) and the split
loader accepts."""
SCHEMA_VERSION_V3 = "sommelier.formatted_example.v3"
"""The ``schema_version`` of a row with one of v3's fields (``template_kwargs``; ``expect`` other
than ``call`` with its ``call_markers``, core.abstention): v2 plus them. A row needing none of
them is written as v2, so a split formatted without them stays byte-identical to 0.4's."""
EXAMPLE_SCHEMA_FILE_V3 = SCHEMAS / "formatted_example.v3.schema.json"
EXAMPLE_SCHEMAS = {SCHEMA_VERSION: EXAMPLE_SCHEMA_FILE, SCHEMA_VERSION_V3: EXAMPLE_SCHEMA_FILE_V3}
"""Every ``schema_version`` the split loader reads, with its schema file."""

UNKNOWN_KEYS = "unknown_keys"
MISSING_KEY = "missing_key"
WRONG_TYPE = "type"
OTHER = "other"
_PRIORITY = {UNKNOWN_KEYS: 0, MISSING_KEY: 1, WRONG_TYPE: 2}
_KINDS = {"additionalProperties": UNKNOWN_KEYS, "required": MISSING_KEY, "type": WRONG_TYPE}


@cache
def schema_validator(schema_file: Path) -> Any:
    """The compiled JSON Schema in ``schema_file`` (checked and loaded once per process)."""
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


@dataclass(frozen=True)
class Violation:
    """One schema violation, in the loader-neutral terms both loaders word.

    ``kind`` is ``unknown_keys`` (``keys``: the instance's keys the schema does not list, sorted;
    ``allowed``: the keys it lists), ``missing_key`` (``keys``: the first required key absent),
    ``type`` (``expected``: the schema's type or types) or ``other`` (``message``: the
    validator's message on one line). ``path`` is where in the document the offending value
    is; ``rule`` is the JSON Schema keyword, ``schema_path`` where in the schema it is.
    """

    kind: str
    path: tuple[str | int, ...]
    instance: Any
    rule: str
    schema_path: tuple[str | int, ...]
    keys: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()
    expected: Any = None
    message: str = ""


def _first_error(schema_file: Path, instance: Any) -> Any:
    """The most useful ``jsonschema.ValidationError`` of ``instance``, or None when valid.

    Unknown keys first (a misspelt key also makes a required key missing, and the unknown one
    names the typo), then missing keys, then types, then other rules; shallow before deep.
    """
    errors = list(schema_validator(schema_file).iter_errors(instance))
    if not errors:
        return None
    return min(
        errors,
        key=lambda e: (
            _PRIORITY.get(_KINDS.get(str(e.validator), OTHER), 3),
            len(e.absolute_path),
            repr(list(e.absolute_path)),
        ),
    )


def violation(schema_file: Path, instance: Any) -> Violation | None:
    """The most useful violation of ``instance`` against ``schema_file``, or None when valid.

    A schema that :func:`compiled_check` can compile is checked with it first: an instance it
    passes is valid (the same answer as jsonschema's, tests/data/test_schema_fast.py), so
    jsonschema runs only on the instances it refuses, to find the violation to report."""
    check = compiled_check(schema_file)
    if check is not None and check(instance):
        return None
    error = _first_error(schema_file, instance)
    if error is None:
        return None
    rule = str(error.validator)
    kind = _KINDS.get(rule, OTHER)
    keys: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()
    if kind == UNKNOWN_KEYS:
        allowed = tuple(sorted(error.schema.get("properties", {})))
        keys = tuple(sorted(k for k in error.instance if k not in allowed))
    elif kind == MISSING_KEY:
        keys = tuple(k for k in error.validator_value if k not in error.instance)[:1]
    return Violation(
        kind=kind,
        path=tuple(error.absolute_path),
        instance=error.instance,
        rule=rule,
        schema_path=tuple(error.absolute_schema_path),
        keys=keys,
        allowed=allowed,
        expected=error.validator_value if kind == WRONG_TYPE else None,
        message=" ".join(error.message.split()),
    )


Check = Callable[[Any], bool]
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "default"})
_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_TYPE_TESTS = {
    "string": "isinstance({v}, str)",
    "object": "isinstance({v}, dict)",
    "array": "isinstance({v}, list)",
    "null": "{v} is None",
    "boolean": "isinstance({v}, bool)",
}


@cache
def compiled_check(schema_file: Path) -> Check | None:
    """``instance -> bool``, true exactly when jsonschema finds no error in a decoded JSON
    ``instance`` against the Draft 2020-12 schema in ``schema_file``; None when the schema uses a
    keyword outside the few compiled here (``type`` of string/object/array/null/boolean,
    ``const`` and ``enum`` of strings, ``minLength``, ``minItems``, ``pattern``, ``required``,
    ``properties``, ``additionalProperties``, ``items``; annotations ignored), which leaves
    every instance to jsonschema. The split loader checks every row, and jsonschema's general
    machinery was most of a 10,000-row split's collection time: this is the same checks as one
    function of plain comparisons, each keyword as jsonschema's own ``_keywords`` define it
    (applied only to instances of its type)."""
    schema_validator(schema_file)  # the schema itself checked, as for jsonschema's own use
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    return compiled_schema_check(schema, extended=False, name=schema_file.name)


def compiled_schema_check(schema: Any, *, extended: bool, name: str) -> Check | None:
    """:func:`compiled_check` of a decoded (already checked) Draft 2020-12 ``schema``.

    ``extended`` also compiles the keywords the run store's schema uses: ``type`` of
    ``number``/``integer``, ``enum`` of strings and null, ``minimum``, ``maximum``,
    ``exclusiveMinimum``, ``exclusiveMaximum``, ``maxLength``, ``allOf``, ``anyOf``, a local
    ``$ref`` to ``#/$defs/<name>`` (``$defs`` compiled where referenced) and
    ``unevaluatedProperties: false`` where the properties evaluated beside it are known from
    the schema alone (``properties`` and ``$ref`` only; anything else leaves the schema to
    jsonschema). ``name`` names the compiled code in a traceback."""
    if not isinstance(schema, dict) or schema.get("$schema") != _DRAFT_2020_12:
        return None
    code = _Code(schema, extended)
    if not code.schema(schema, "v0", 1):
        return None
    source = "\n".join(
        [*code.functions, "def check(v0):", *code.lines, "    return True", ""]
    )
    namespace: dict[str, Any] = dict(code.constants)
    exec(compile(source, f"<compiled {name}>", "exec"), namespace)
    return cast(Check, namespace["check"])


_NUMBER = "(isinstance({v}, (int, float)) and not isinstance({v}, bool))"
_EXTENDED_TYPE_TESTS = {
    **_TYPE_TESTS,
    "number": _NUMBER,
    "integer": "((isinstance({v}, int) and not isinstance({v}, bool)) or "
    "(isinstance({v}, float) and {v}.is_integer()))",
}
_BOUNDS = {"minimum": "<", "maximum": ">", "exclusiveMinimum": "<=", "exclusiveMaximum": ">="}
"""Each numeric bound and the comparison of an instance with it that jsonschema refuses."""
_NOT_STATIC = (
    "additionalProperties", "patternProperties", "dependentSchemas", "allOf", "oneOf", "anyOf",
    "if", "$dynamicRef", "$recursiveRef",
)  # fmt: skip
"""Keywords whose evaluated properties depend on the instance (jsonschema's
``find_evaluated_property_keys_by_schema``): an ``unevaluatedProperties`` beside them is not
compiled."""


class _Code:
    """The lines of a compiled check (``return False`` at the first failing keyword), the
    functions it calls (one per ``$ref`` target and ``anyOf`` branch) and the constants they
    name (key sets, compiled patterns, allowed strings, bounds)."""

    def __init__(self, root: Any = None, extended: bool = False) -> None:
        self.lines: list[str] = []
        self.functions: list[str] = []
        self.constants: dict[str, Any] = {"MISSING": object()}
        self.names = 0
        self.root = root
        self.extended = extended
        self.refs: dict[str, str] = {}

    def fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def constant(self, value: Any) -> str:
        name = self.fresh("C")
        self.constants[name] = value
        return name

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def function(self, schema: Any, name: str) -> bool:
        """Compile ``schema`` as the function ``name`` (instance -> bool); False: not
        compilable."""
        outer = self.lines
        self.lines = []
        argument = self.fresh("v")
        compiled = self.schema(schema, argument, 1)
        body = [f"def {name}({argument}):", *self.lines, "    return True", ""]
        self.lines = outer
        self.functions.append("\n".join(body))
        return compiled

    def reference(self, ref: Any) -> str | None:
        """The function checking the target of a local ``$ref`` (``#/$defs/<name>``), or None
        when it is another reference or not compilable."""
        found, target = self.definition(ref)
        if not found:
            return None
        if ref not in self.refs:
            self.refs[ref] = self.fresh("ref")
            if not self.function(target, self.refs[ref]):
                return None
        return self.refs[ref]

    def definition(self, ref: Any) -> tuple[bool, Any]:
        """``(True, schema)`` for a local ``$ref`` to ``#/$defs/<name>`` of the root (a plain
        name: no ``/``, ``~`` or ``%`` escapes), ``(False, None)`` for any other reference."""
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            return False, None
        key = ref[len("#/$defs/"):]
        definitions = self.root.get("$defs") if isinstance(self.root, dict) else None
        if "/" in key or "~" in key or "%" in key or not isinstance(definitions, dict):
            return False, None
        if key not in definitions:
            return False, None
        return True, definitions[key]

    def evaluated(self, schema: Any, seen: frozenset[str] = frozenset()) -> frozenset[str] | None:
        """The property names ``schema`` evaluates in place when that set does not depend on
        the instance (``properties``, through ``$ref``s), else None."""
        if isinstance(schema, bool):
            return frozenset()
        if not isinstance(schema, dict) or any(key in schema for key in _NOT_STATIC):
            return None
        unevaluated = schema.get("unevaluatedProperties", False)
        if unevaluated is not False:
            return None
        names: set[str] = set()
        properties = schema.get("properties")
        if isinstance(properties, dict):
            names.update(properties)
        if "$ref" in schema:
            ref = schema["$ref"]
            found, target = self.definition(ref)
            if not found or ref in seen:
                return None
            inner = self.evaluated(target, seen | {ref})
            if inner is None:
                return None
            names.update(inner)
        return frozenset(names)

    def schema(self, schema: Any, v: str, depth: int) -> bool:
        """Emit the checks of one (sub)schema on variable ``v``; False: not compilable."""
        if schema is True:
            return True
        if schema is False:
            self.emit(depth, "return False")
            return True
        if not isinstance(schema, dict):
            return False
        return all(self.keyword(key, rule, schema, v, depth) for key, rule in schema.items())

    def keyword(self, key: str, rule: Any, schema: dict[str, Any], v: str, depth: int) -> bool:
        if key in _ANNOTATIONS:
            return True
        if self.extended and key in _BOUNDS:
            if type(rule) not in (int, float):
                return False
            bound = self.constant(rule)
            number = _NUMBER.format(v=v)
            self.emit(depth, f"if {number} and {v} {_BOUNDS[key]} {bound}: return False")
            return True
        if self.extended and key == "maxLength":
            if type(rule) is not int:
                return False
            self.emit(depth, f"if isinstance({v}, str) and len({v}) > {rule}: return False")
            return True
        if self.extended and key == "$defs":
            return isinstance(rule, dict)  # compiled where a $ref names one
        if self.extended and key == "$ref":
            target = self.reference(rule)
            if target is None:
                return False
            self.emit(depth, f"if not {target}({v}): return False")
            return True
        if self.extended and key == "allOf":
            if not isinstance(rule, list) or not rule:
                return False
            return all(self.schema(sub, v, depth) for sub in rule)
        if self.extended and key == "anyOf":
            if not isinstance(rule, list) or not rule:
                return False
            branches = [self.fresh("any") for _ in rule]
            if not all(self.function(sub, name) for sub, name in zip(rule, branches, strict=True)):
                return False
            test = " or ".join(f"{name}({v})" for name in branches)
            self.emit(depth, f"if not ({test}): return False")
            return True
        if self.extended and key == "unevaluatedProperties":
            evaluated = self.evaluated(schema) if rule is False else None
            if evaluated is None:
                return False
            allowed_keys = self.constant(evaluated)
            self.emit(depth, f"if isinstance({v}, dict) and not {v}.keys() <= {allowed_keys}:")
            self.emit(depth + 1, "return False")
            return True
        if key == "type":
            tests = _EXTENDED_TYPE_TESTS if self.extended else _TYPE_TESTS
            types = rule if isinstance(rule, list) else [rule]
            if not types or not all(isinstance(n, str) and n in tests for n in types):
                return False
            test = " or ".join(tests[n].format(v=v) for n in types)
            self.emit(depth, f"if not ({test}): return False")
            return True
        if key in ("const", "enum"):
            values = [rule] if key == "const" else rule
            if not isinstance(values, list) or not all(isinstance(x, str) for x in values):
                if not (self.extended and key == "enum" and isinstance(values, list)):
                    return False  # jsonschema's equal() of strings is ==; nothing else compiled
                if not all(isinstance(x, str) or x is None for x in values):
                    return False
            allowed = self.constant(frozenset(x for x in values if x is not None))
            test = f"isinstance({v}, str) and {v} in {allowed}"
            if None in values:
                test = f"{v} is None or ({test})"
            self.emit(depth, f"if not ({test}): return False")
            return True
        if key in ("minLength", "minItems"):
            if type(rule) is not int:
                return False
            kind = "str" if key == "minLength" else "list"
            self.emit(depth, f"if isinstance({v}, {kind}) and len({v}) < {rule}: return False")
            return True
        if key == "pattern":
            if not isinstance(rule, str):
                return False
            search = self.constant(re.compile(rule).search)
            self.emit(depth, f"if isinstance({v}, str) and {search}({v}) is None: return False")
            return True
        if key == "required":
            if not isinstance(rule, list) or not all(isinstance(k, str) for k in rule):
                return False
            keys = self.constant(frozenset(rule))
            self.emit(depth, f"if isinstance({v}, dict) and not {v}.keys() >= {keys}: return False")
            return True
        if key == "properties":
            if not isinstance(rule, dict):
                return False
            self.emit(depth, f"if isinstance({v}, dict):")
            self.emit(depth + 1, "pass")
            for name, sub in rule.items():
                item = self.fresh("v")
                self.emit(depth + 1, f"{item} = {v}.get({name!r}, MISSING)")
                self.emit(depth + 1, f"if {item} is not MISSING:")
                self.emit(depth + 2, "pass")
                if not self.schema(sub, item, depth + 2):
                    return False
            return True
        if key == "additionalProperties":
            if "patternProperties" in schema:
                return False
            known = self.constant(frozenset(schema.get("properties", {})))
            if rule is False:
                self.emit(depth, f"if isinstance({v}, dict) and not {v}.keys() <= {known}:")
                self.emit(depth + 1, "return False")
                return True
            name, item = self.fresh("k"), self.fresh("v")
            self.emit(depth, f"if isinstance({v}, dict):")
            self.emit(depth + 1, f"for {name}, {item} in {v}.items():")
            self.emit(depth + 2, f"if {name} not in {known}:")
            self.emit(depth + 3, "pass")
            return self.schema(rule, item, depth + 3)
        if key == "items":
            if "prefixItems" in schema:
                return False
            item = self.fresh("v")
            self.emit(depth, f"if isinstance({v}, list):")
            self.emit(depth + 1, f"for {item} in {v}:")
            self.emit(depth + 2, "pass")
            return self.schema(rule, item, depth + 2)
        return False


def json_path_text(path: Iterable[Any]) -> str:
    """``messages[0].role`` style name of a path inside a JSON/TOML document."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def parameters_validator(parameters: Any) -> Any:
    """The JSON Schema validator class a tool's ``parameters`` are checked with: the draft its
    ``$schema`` names (draft 3, 4, 6, 7, 2019-09, 2020-12), else Draft 2020-12; None for a
    ``$schema`` that names no draft jsonschema knows (a ``$schema`` that is not a string
    included: jsonschema's lookup raises on a list and on ``true``)."""
    default = jsonschema.Draft202012Validator
    if not isinstance(parameters, dict) or "$schema" not in parameters:
        return default
    if not isinstance(parameters["$schema"], str):
        return None
    return jsonschema.validators.validator_for(parameters, default=None)


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = (
    "items", "additionalProperties", "additionalItems", "not", "if", "then", "else",
    "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
)
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


def _schemas(schema: Any) -> Iterator[dict[str, Any]]:
    """Every (sub)schema of ``schema``, by keyword (so a property named ``$ref`` is a name,
    and ``enum``/``const``/``default`` values are data, not schemas)."""
    if not isinstance(schema, dict):
        return
    yield schema
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            for sub in value.values():
                yield from _schemas(sub)
        elif key in (*_SCHEMA_LISTS, "items") and isinstance(value, list):
            for sub in value:
                yield from _schemas(sub)
        elif key in _SCHEMA_ONE:
            yield from _schemas(value)


def _pointer_target(root: Any, ref: str) -> bool:
    """Whether the local ``ref`` (``#`` or ``#/a/b``, RFC 6901 escapes) points into ``root``."""
    if ref == "#":
        return True
    node = root
    for raw in ref[2:].split("/"):
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


def ref_problem(parameters: Any) -> str | None:
    """Why a ``$ref`` of a tool's ``parameters`` cannot be used, or None: every reference must
    be local (``#`` or ``#/<pointer>``) and resolve inside the parameters themselves, and no
    ``$id`` may move where references resolve. Nothing is ever fetched: a URL or a file name
    is refused, not retrieved."""
    for schema in _schemas(parameters):
        if "$id" in schema:
            return "uses $id, which makes $ref resolve against a URL; remove it"
        for key in _REF_KEYS:
            ref = schema.get(key)
            if key not in schema:
                continue
            if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
                return (
                    f"{key} {ref!r} is not in the tool's parameters (a URL or a file is never "
                    "fetched): use a local reference such as '#/$defs/<name>'"
                )
            if not _pointer_target(parameters, ref):
                return f"{key} {ref!r} does not resolve inside the tool's parameters"
    return None


_PARAMETERS_ERRORS: JsonMemo[str | None] = JsonMemo(4096)
""":func:`parameters_error`'s answers (a split or an import offers the same few tools on many
rows; jsonschema's meta-schema check is ~7 ms each)."""


def parameters_error(parameters: Any) -> str | None:
    """Why a tool's ``parameters`` is not a valid JSON Schema (of the draft its ``$schema``
    names, else Draft 2020-12; :func:`parameters_validator`), or holds a ``$ref`` that cannot
    be resolved locally (:func:`ref_problem`), or nests deeper than ``FIELD_DEPTH_LIMIT``
    (checked first, so validation never runs out of stack), or None. The answer for a
    parameters value of JSON's own types is remembered per process by its JSON text
    (``data.json_memo``: the same text is the same schema, key order included)."""
    deep = depth_problem(parameters, FIELD_DEPTH_LIMIT)
    if deep is not None:
        return deep
    return _PARAMETERS_ERRORS.answer("parameters", parameters, _parameters_error)


def _parameters_error(parameters: Any) -> str | None:
    """:func:`parameters_error` past the depth check, never remembered."""
    validator = parameters_validator(parameters)
    if validator is None:
        return (
            f"$schema {parameters.get('$schema')!r} names no known JSON Schema draft (drafts "
            "3, 4, 6, 7, 2019-09 and 2020-12 are; without $schema, 2020-12 is used)"
        )
    try:
        validator.check_schema(parameters)
    except jsonschema.SchemaError as exc:
        return str(exc.message)
    return ref_problem(parameters)


def arguments_error(parameters: Any, arguments: Any) -> tuple[str, str] | None:
    """The first violation of ``arguments`` against a tool's (valid) ``parameters`` schema, by
    path: ``(path as [..] segments, message)``, or None when they validate. Used for gold calls
    by ``sommelier format`` and ``sommelier import bfcl`` alike. ``parameters`` must have
    passed :func:`parameters_error` (so every ``$ref`` resolves locally); a validator that
    still fails is reported as a violation, never raised; arguments nested deeper than
    ``FIELD_DEPTH_LIMIT`` are a violation at the top."""
    deep = depth_problem(arguments, FIELD_DEPTH_LIMIT)
    if deep is not None:
        return "", deep
    validator = (parameters_validator(parameters) or jsonschema.Draft202012Validator)(parameters)
    try:
        errors = sorted(
            validator.iter_errors(arguments), key=lambda error: list(error.absolute_path)
        )
    except Exception as exc:  # a reference the checks let through: a line, never a traceback
        return "", f"the tool's parameters cannot be applied ({type(exc).__name__})"
    if not errors:
        return None
    return "".join(f"[{part!r}]" for part in errors[0].absolute_path), str(errors[0].message)
