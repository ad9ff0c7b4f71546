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

from pathlib import Path

from ministream.core.plan import Dataflow
from ministream.core.steps import Step
from ministream.lessons import all_lessons
from ministream.lessons.barrier_alignment import ALIGNMENT_SEED, checkpointed_run
from ministream.operators.planner import physical_graph

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
                    receiver = channel.name.split("->")[1]
                    lines.append(f"  {_quote(str(subtask))} -> {_quote(receiver)} [label={_quote(_edge_label(edge))}];")
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
    return written


def write_barrier_diagram(directory: str | Path = "diagrams") -> Path:
    """Render the first held-back moment of the barrier lesson's ``ALIGNMENT_SEED`` run to
    ``barrier-alignment.barriers.svg``: the physical graph with the rows and barriers waiting in each channel
    (``checkpoints.barriers.barriers_dot``)."""
    _caption, dot = checkpointed_run(seed=ALIGNMENT_SEED, pictures=True).pictures[0]
    return render_svg(dot, Path(directory) / "barrier-alignment.barriers.svg")
