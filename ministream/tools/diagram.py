"""Diagrams as code: a dataflow drawn as Graphviz DOT text, and rendered to SVG by one command.

:func:`to_dot` is a pure function from a dataflow to text, so tests compare it with a golden string. With
``parallelism`` it draws the *physical* plan: each step's subtasks, and one arrow per channel, so a learner
sees a hash edge fan out into every subtask of the keyed step. ``make diagrams`` (``ministream diagrams``)
renders every lesson into ``diagrams/LESSON.svg``.

>>> from ministream.lessons import get_lesson
>>> lesson = get_lesson("running-aggregation")
>>> print(to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params())))
digraph "running-aggregation" {
  rankdir=LR;
  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica"];
  edge [fontname="Helvetica", fontsize=10];
  "events" [label="events\\nsource", fillcolor="#e3f4e1"];
  "totals" [label="totals\\naggregate\\nkey: key\\naggregates: count=count(*), sum=sum(value)", fillcolor="#fdf0d5"];
  "output" [label="output\\nsink", fillcolor="#e3f4e1"];
  "events" -> "totals" [label="hash by key"];
  "totals" -> "output" [label="gather"];
}
"""

from __future__ import annotations

import ast
from pathlib import Path

from ministream.core.plan import Dataflow
from ministream.core.steps import Step
from ministream.lessons import all_lessons
from ministream.lessons.barrier_alignment import ALIGNMENT_SEED, checkpointed_run
from ministream.operators.planner import physical_graph

PACKAGE = Path(__file__).resolve().parents[1]
"""The folder of the installed ``ministream`` package, whose modules the architecture diagram reads."""

COLORS = {"source": "#e3f4e1", "sink": "#e3f4e1", "keyed": "#fdf0d5"}


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(step: Step) -> str:
    lines = [step.name, step.kind]
    lines += [f"{name}: {value}" for name, value in step.describe().items()]
    return "\\n".join(line.replace('"', "'") for line in lines)


def _color(step: Step) -> str:
    return COLORS.get(step.kind) or (COLORS["keyed"] if step.parallelism == "keyed" else None)


def _edge_label(edge) -> str:
    label = "hash by " + ", ".join(edge.key_columns) if edge.partition == "hash" else edge.partition
    return f"side output {edge.output}: {label}" if edge.output else label


def to_dot(flow: Dataflow, parallelism: int | None = None) -> str:
    """The dataflow as DOT text: the logical plan, or with ``parallelism`` the physical one (subtasks)."""
    lines = [
        f"digraph {_quote(flow.name)} {{",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    if parallelism is None:
        for step in flow.steps:
            color = _color(step)
            fill = f", fillcolor={_quote(color)}" if color else ""
            lines.append(f'  {_quote(step.name)} [label="{_label(step)}"{fill}];')
        for step in flow.steps:
            for edge in step.inputs:
                lines.append(
                    f"  {_quote(edge.upstream.name)} -> {_quote(step.name)} [label={_quote(_edge_label(edge))}];"
                )
    else:
        graph = physical_graph(flow, parallelism)
        for step in flow.steps:
            color = _color(step)
            lines.append(f"  subgraph {_quote('cluster_' + step.name)} {{")
            lines.append(f'    label="{_label(step)}"; style="rounded"; color="#8899aa";')
            for subtask in graph.by_step[step.name]:
                fill = f", fillcolor={_quote(color)}" if color else ""
                lines.append(f'    {_quote(str(subtask))} [label="{subtask}"{fill}];')
            lines.append("  }")
        for subtask in graph.subtasks:
            for _partition, channels, edge in subtask.output.routes:
                for channel in channels:
                    lines.append(
                        f"  {_quote(str(subtask))} -> {_quote(channel.receiver)} [label={_quote(_edge_label(edge))}];"
                    )
    lines.append("}")
    return "\n".join(lines)


LAYERS = (
    "errors",
    "state",
    "time",
    "core",
    "operators",
    "models",
    "checkpoints",
    "spark",
    "lessons",
    "workshop",
    "tools",
)
"""The package's layers, lowest first: each imports only the ones before it (``pyproject.toml``'s import-linter
contract says the same, and ``lint-imports`` checks it)."""


def package_modules() -> dict[str, list[str]]:
    """``{layer: [its modules and subpackages, by name]}``, read from the installed package itself.

    >>> package_modules()["time"]
    ['clock', 'lateness', 'ranges', 'timers', 'units', 'watermarks', 'windows']
    """
    root = PACKAGE
    found: dict[str, list[str]] = {}
    for layer in LAYERS:
        place = root / layer
        if not place.is_dir():
            found[layer] = []
            continue
        names = [p.stem for p in place.glob("*.py") if p.stem not in ("__init__", "__main__")]
        names += [f"{p.name}/" for p in place.iterdir() if (p / "__init__.py").exists()]
        found[layer] = sorted(names)
    return found


def layer_imports() -> set[tuple[str, str]]:
    """Which layer imports which, ``{(importer, imported)}``, from every import statement of the package
    (those inside functions included)."""
    root = PACKAGE
    edges: set[tuple[str, str]] = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).parts
        source = "errors" if parts == ("errors.py",) else parts[0]
        if source not in LAYERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                bits = name.split(".")
                if bits[0] == "ministream" and len(bits) > 1 and bits[1] in LAYERS and bits[1] != source:
                    edges.add((source, bits[1]))
    return edges


def _wrapped(names: list[str], per_line: int = 6) -> str:
    lines = [", ".join(names[i : i + per_line]) for i in range(0, len(names), per_line)]
    return "\\n".join(lines)


def architecture_dot() -> str:
    """The package's layers as DOT text, top to bottom, each with its modules, and an arrow from each layer to
    every layer below it that it imports (rendered to ``diagrams/architecture.svg`` by ``make diagrams``).

    >>> layers = [line.split()[0] for line in architecture_dot().splitlines() if "fillcolor" in line]
    >>> layers[:3], layers[-1]
    (['"tools"', '"workshop"', '"lessons"'], '"errors"')
    """
    modules = package_modules()
    fills = {
        "errors": "#eeeeee",
        "state": "#fdf0d5",
        "time": "#fdf0d5",
        "core": "#eef3fb",
        "operators": "#eef3fb",
        "models": "#eef3fb",
        "checkpoints": "#eef3fb",
        "spark": "#e3f4e1",
        "lessons": "#e3f4e1",
        "workshop": "#f3e8f9",
        "tools": "#f3e8f9",
    }
    lines = [
        'digraph "ministream" {',
        '  rankdir=TB; ranksep=0.25; nodesep=0.3; label="ministream: each layer imports only the layers below it"; labelloc=t;',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, width=6];',
        '  edge [color="#8899aa", arrowsize=0.6];',
        '  fontname="Helvetica";',
    ]
    for layer in reversed(LAYERS):
        label = f"{layer}\\n{_wrapped(modules[layer])}" if modules[layer] else layer
        lines.append(f'  {_quote(layer)} [label="{label}", fillcolor="{fills[layer]}"];')
    order = {layer: i for i, layer in enumerate(LAYERS)}
    for upper, lower in zip(LAYERS[1:][::-1], LAYERS[:-1][::-1]):  # the stack itself, drawn as a column
        lines.append(f"  {_quote(upper)} -> {_quote(lower)} [style=invis, weight=10];")
    for importer, imported in sorted(layer_imports(), key=lambda e: (-order[e[0]], -order[e[1]])):
        if order[imported] == order[importer] - 1:
            lines.append(f"  {_quote(importer)} -> {_quote(imported)};")
        else:
            lines.append(f'  {_quote(importer)} -> {_quote(imported)} [constraint=false, color="#c8d0d8"];')
    lines.append("}")
    return "\n".join(lines)


def render_svg(dot_text: str, path: str | Path) -> Path:
    """Render DOT text to an SVG file with Graphviz's ``dot`` (installed by ``make setup``)."""
    import graphviz

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(graphviz.Source(dot_text).pipe(format="svg"))
    return path


def render_lessons(directory: str | Path = "diagrams", parallelism: int = 2) -> list[Path]:
    """Render every lesson's dataflow (logical, and physical at ``parallelism``) into ``directory``."""

    written = []
    for lesson in all_lessons():
        flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
        written.append(render_svg(to_dot(flow), Path(directory) / f"{lesson.name}.svg"))
        written.append(render_svg(to_dot(flow, parallelism), Path(directory) / f"{lesson.name}.physical.svg"))
    written.append(write_barrier_diagram(directory))
    written.append(render_svg(architecture_dot(), Path(directory) / "architecture.svg"))
    return written


def write_barrier_diagram(directory: str | Path = "diagrams") -> Path:
    """Render the first held-back moment of the barrier lesson's ``ALIGNMENT_SEED`` run to
    ``barrier-alignment.barriers.svg``: the physical graph with the rows and barriers waiting in each channel
    (``checkpoints.barriers.barriers_dot``)."""
    _caption, dot = checkpointed_run(seed=ALIGNMENT_SEED, pictures=True).pictures[0]
    return render_svg(dot, Path(directory) / "barrier-alignment.barriers.svg")
