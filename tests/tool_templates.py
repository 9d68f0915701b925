"""Chat templates written for these tests, rendering tools and tool calls the way each model
family does, and tokenizer folders built from them without the hub.

Each template is our own text (no third-party template is copied): it only mimics the *shape*
of a family's rendering, which is what ``sommelier.native-tools.v1`` and parser v1 care about.

- ``HERMES``: Hermes / Qwen2.5 style: tools as JSON lines inside ``<tools></tools>`` in the
  system turn, the call as ``<tool_call>\\n{"name", "arguments"}\\n</tool_call><|im_end|>``;
- ``MISTRAL``: ``[AVAILABLE_TOOLS][...][/AVAILABLE_TOOLS][INST] ... [/INST]`` and the call as
  ``[TOOL_CALLS][{"name", "arguments"}]</s>``;
- ``LLAMA3``: Llama 3.x style headers, the tools as indented JSON in the first user turn, the
  call as a bare ``{"name", "parameters"}<|eot_id|>``;
- ``THINKING``: a reasoning model's shape: every assistant turn opens with a (here empty)
  ``<think>...</think>`` block, and the option ``enable_thinking=false`` closes an empty block
  in the generation prompt (so the model answers without reasoning);
- ``IGNORES_TOOLS``: a chat template that never looks at ``tools``;
- ``NO_TOOL_CALLS``: renders ``tools`` but renders an assistant turn by its content only, so the
  call is dropped; ``RAISES_ON_TOOL_CALLS`` raises on an assistant ``tool_calls`` message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

HERMES = (
    "{% set sys = messages[0].content if messages[0].role == 'system' else none %}"
    "{% if tools %}"
    "<|im_start|>system\n{% if sys %}{{ sys + '\n\n' }}{% endif %}"
    "You can call these functions; each signature is one line inside <tools></tools>:\n"
    "<tools>{% for tool in tools %}{{ '\n' }}{{ tool | tojson }}{% endfor %}{{ '\n' }}</tools>\n"
    "Answer with the call inside <tool_call></tool_call> tags.<|im_end|>{{ '\n' }}"
    "{% elif sys %}<|im_start|>system\n{{ sys }}<|im_end|>{{ '\n' }}{% endif %}"
    "{% for m in messages %}"
    "{% if m.role == 'assistant' %}"
    "<|im_start|>assistant{% if m.content %}{{ '\n' + m.content }}{% endif %}"
    "{% for call in m.tool_calls or [] %}"
    "{% set f = call.function if call.function is defined else call %}"
    "{{ '\n<tool_call>\n' }}{{ {'name': f.name, 'arguments': f.arguments} | tojson }}"
    "{{ '\n</tool_call>' }}"
    "{% endfor %}<|im_end|>{{ '\n' }}"
    "{% elif m.role != 'system' %}"
    "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{{ '\n' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

MISTRAL = (
    "<s>"
    "{% if tools %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]{% endif %}"
    "{% for m in messages %}"
    "{% if m.role == 'system' %}[SYSTEM_PROMPT]{{ m.content }}[/SYSTEM_PROMPT]"
    "{% elif m.role == 'user' %}[INST]{{ m.content }}[/INST]"
    "{% elif m.tool_calls %}[TOOL_CALLS]"
    "{% set ns = namespace(calls=[]) %}"
    "{% for call in m.tool_calls %}"
    "{% set ns.calls = ns.calls + [{'name': call.function.name, "
    "'arguments': call.function.arguments}] %}"
    "{% endfor %}{{ ns.calls | tojson }}</s>"
    "{% else %}{{ m.content }}</s>"
    "{% endif %}"
    "{% endfor %}"
)

LLAMA3 = (
    "<|begin_of_text|>"
    "{% if messages[0].role == 'system' %}"
    "{{ '<|start_header_id|>system<|end_header_id|>\n\n' + messages[0].content + '<|eot_id|>' }}"
    "{% endif %}"
    "{% set ns = namespace(first=true) %}"
    "{% for m in messages if m.role != 'system' %}"
    "{% if m.role == 'user' %}"
    "{{ '<|start_header_id|>user<|end_header_id|>\n\n' }}"
    "{% if tools and ns.first %}"
    "Pick one of these functions and reply with one JSON object "
    '{"name": ..., "parameters": {...}} only.{{ "\n\n" }}'
    "{% for t in tools %}{{ t | tojson(indent=2) }}{{ '\n\n' }}{% endfor %}"
    "{% endif %}"
    "{% set ns.first = false %}"
    "{{ m.content }}<|eot_id|>"
    "{% elif m.tool_calls %}"
    "{% set f = m.tool_calls[0].function %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{{ {'name': f.name, 'parameters': f.arguments} | tojson }}<|eot_id|>"
    "{% else %}"
    "{{ '<|start_header_id|>' + m.role + '<|end_header_id|>\n\n' + m.content + '<|eot_id|>' }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

THINKING = (
    "{% for m in messages %}"
    "{% if m.role == 'assistant' %}"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n{{ m.content }}<|im_end|>\n"
    "{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)

IGNORES_TOOLS = (
    "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>{{ '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)

NO_TOOL_CALLS = (
    "{% if tools %}<|tools|>{{ tools | tojson }}<|end|>{{ '\n' }}{% endif %}"
    "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>{{ '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)

RAISES_ON_TOOL_CALLS = (
    "{% if tools %}<|tools|>{{ tools | tojson }}<|end|>{{ '\n' }}{% endif %}"
    "{% for m in messages %}"
    "{% if m.tool_calls %}{{ raise_exception('this template knows no tool calls') }}{% endif %}"
    "<|{{ m.role }}|>\n{{ m.content }}<|end|>{{ '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)

FAMILIES: dict[str, tuple[str, str]] = {
    "hermes": (HERMES, "arguments"),
    "llama3": (LLAMA3, "parameters"),
}
"""The families parser v1 reads, each with the arguments key its template writes."""


def build_tokenizer(template: str) -> Any:
    """A tiny word-level fast tokenizer with ``template`` as its chat template (no hub)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "<eos>": 1, "weather": 2, "paris": 3}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", eos_token="<eos>", chat_template=template
    )


def tokenizer_folder(path: Path, template: str) -> Path:
    """Save a tokenizer with ``template`` into ``path`` (a local folder ``--tokenizer`` takes)."""
    build_tokenizer(template).save_pretrained(path)
    return path
