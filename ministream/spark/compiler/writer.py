"""The code writer: the PySpark source of a twin, one statement per step, named after the step.

The compiler does not build DataFrames directly: it writes Python source, and the twin is that source run with
``exec``. So what ``ministream twin LESSON`` prints is exactly the code that runs. Each step becomes a comment
saying which ministream step it comes from (its kind and settings, from ``describe()``) and one statement that
assigns a variable named after the step.

>>> writer = SourceWriter("counts")
>>> name = writer.name_of("per key")
>>> writer.comment("aggregate 'per key'")
>>> writer.assign(name, 'events.groupBy("key").count()')
>>> writer.returns(name)
>>> print(writer.source(), end="")
# The PySpark twin of the ministream dataflow 'counts', written by ministream.spark.compiler.
from pyspark.sql import functions as F
<BLANKLINE>
<BLANKLINE>
def twin(inputs):
    # aggregate 'per key'
    per_key = events.groupBy("key").count()
    return per_key
"""

from __future__ import annotations

import json
import keyword
import re
import textwrap

import attrs

RESERVED = {"F", "inputs", "steps", "twin", "spark"}
RUNTIME = "ministream.spark.compiler.runtime"
"""The module of the helpers the generated code calls (UDF wrappers): imported by name when used."""
HELPERS = (
    "map_rows",
    "flat_map_rows",
    "row_value",
    "row_predicate",
    "pair_predicate",
    "fold_values",
    "session_gap",
    "static_table",
)
"""Names the generated code uses for itself: a step called so gets another variable name."""


WIDTH = 120
"""The longest line the writer leaves on one line (the project's line length)."""


def _split_top_level(text: str) -> list[str]:
    """``text`` cut at the commas that are outside brackets and strings."""
    parts, depth, quote, start = [], 0, None, 0
    for i, char in enumerate(text):
        if quote:
            quote = None if char == quote and text[i - 1] != "\\" else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [part for part in parts if part]


def _last_call(line: str) -> int | None:
    """The index of the ``(`` that the line's final ``)`` closes (``None`` when the line does not end with one)."""
    if not line.endswith(")"):
        return None
    depth, quote = 0, None
    for i in range(len(line) - 1, -1, -1):
        char = line[i]
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in ")]}":
            depth += 1
        elif char in "([{":
            depth -= 1
            if depth == 0:
                return i
    return None


def wrapped(line: str) -> list[str]:
    """A line of code as ruff would break it when it is too long: the last call's arguments one per line.

    >>> wrapped("    x = df.agg(" + ", ".join(f'F.count("c{i}")' for i in range(9)) + ")")[:2]
    ['    x = df.agg(', '        F.count("c0"),']
    """
    opening = _last_call(line)
    if len(line) <= WIDTH or opening is None:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    arguments = _split_top_level(line[opening + 1 : -1])
    return [line[: opening + 1], *(f"{indent}    {argument}," for argument in arguments), f"{indent})"]


def literal(value) -> str:
    """A Python literal for a string (in double quotes, as ruff writes them), a number, a bool or ``None``;
    a list or tuple of them as a list, a dict as a dict.

    >>> literal("10 seconds"), literal(["key", "ts"]), literal(None)
    ('"10 seconds"', '["key", "ts"]', 'None')
    """
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(key)}: {literal(item)}" for key, item in value.items()) + "}"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


@attrs.define
class SourceWriter:
    """The lines of a twin's source, written step by step; ``imports`` and ``notes`` head the file."""

    flow_name: str
    notes: list[str] = attrs.field(factory=list)
    imports: list[str] = attrs.field(factory=lambda: ["from pyspark.sql import functions as F"])
    body: list[str] = attrs.field(factory=list)
    names: dict[str, str] = attrs.field(factory=dict)

    def name_of(self, step: str) -> str:
        """The variable of a step: its name as a Python identifier, unique in the twin."""
        if step in self.names:
            return self.names[step]
        base = re.sub(r"\W", "_", step) or "step"
        if base[0].isdigit() or keyword.iskeyword(base) or base in RESERVED:
            base = f"step_{base}"
        name, n = base, 2
        while name in self.names.values():
            name, n = f"{base}_{n}", n + 1
        self.names[step] = name
        return name

    def use(self, line: str) -> None:
        """Add an import line to the head of the file (once)."""
        if line not in self.imports:
            self.imports.append(line)

    def note(self, text: str) -> None:
        """A comment at the head of the file (wrapped at :data:`WIDTH`)."""
        self.notes.extend(textwrap.wrap(text, WIDTH - 2))

    def comment(self, text: str) -> None:
        """A comment in the body (wrapped at :data:`WIDTH`)."""
        self.body.extend(f"    # {line}" for line in textwrap.wrap(text, WIDTH - 6))

    def assign(self, name: str, expression: str) -> None:
        """``name = expression`` in the body; a line longer than :data:`WIDTH` has the arguments of its last
        call one per line, as ruff formats them."""
        self.body.extend(wrapped(f"    {name} = {expression}"))

    def returns(self, name: str) -> None:
        """The last line: the twin returns this DataFrame."""
        self.body.append(f"    return {name}")

    def source(self) -> str:
        """The whole file."""
        head = [
            f"# The PySpark twin of the ministream dataflow {self.flow_name!r}, written by ministream.spark.compiler."
        ]
        head += [f"# {note}" for note in self.notes]
        body = "\n".join(self.body)
        helpers = [name for name in HELPERS if re.search(rf"\b{name}\(", body)]
        imports = self.imports + ([f"from {RUNTIME} import {', '.join(helpers)}"] if helpers else [])
        return "\n".join([*head, *imports, "", "", "def twin(inputs):", body]) + "\n"
