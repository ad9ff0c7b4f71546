"""Diagrams as code: a dataflow drawn as Graphviz DOT text, and rendered to SVG by one command.

:func:`to_dot` is a pure function from a dataflow to text, so tests compare it with a golden string. With
``parallelism`` it draws the *physical* plan: each step's subtasks, and one arrow per channel, so a learner
sees a hash edge fan out into every subtask of the keyed step. ``make diagrams`` (``ministream diagrams``)
renders every lesson into ``diagrams/LESSON.svg``. Every diagram is laid out top to bottom with one font, and
long settings wrap, so that it fits a notebook or a page (at most about 900 points wide).

>>> from ministream.lessons import get_lesson
>>> lesson = get_lesson("running-aggregation")
>>> print(to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params())))
digraph "running-aggregation" {
  rankdir=TB;
  graph [fontname="Helvetica", fontsize=11, nodesep=0.3, ranksep=0.35];
  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica", fontsize=11];
  edge [fontname="Helvetica", fontsize=9, color="#556677"];
  "events" [label="events\\nsource\\n", fillcolor="#e3f4e1"];
  "totals" [label="totals\\naggregate\\nkey: key\\laggregates: count=count(*),\\l  sum=sum(value)\\l", fillcolor="#fdf0d5"];
  "output" [label="output\\nsink\\n", fillcolor="#e3f4e1"];
  "events" -> "totals" [label="hash by key"];
  "totals" -> "output" [label="gather"];
}
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Sequence
from pathlib import Path

from ministream.checkpoints.coordinator import load_checkpoint
from ministream.checkpoints.recovery import run_with_recovery
from ministream.checkpoints.storage import MemoryStorage
from ministream.core.plan import Dataflow
from ministream.core.steps import Step
from ministream.lessons import all_lessons, get_lesson
from ministream.lessons.barrier_alignment import ALIGNMENT_SEED, checkpointed_run
from ministream.lessons.rescale import keys_moved
from ministream.operators.planner import optimizer_notes, physical_graph
from ministream.state.changelog import ChangelogBackends, ChangelogStorage
from ministream.state.keygroups import key_group_range
from ministream.time.units import format_clock

PACKAGE = Path(__file__).resolve().parents[1]
"""The folder of the installed ``ministream`` package, whose modules the architecture diagram reads."""

COLORS = {"source": "#e3f4e1", "sink": "#e3f4e1", "keyed": "#fdf0d5"}

FONT = "Helvetica"
"""The one font of every diagram: nodes, arrows and the graph's own labels."""

LINE_WIDTH = 36
"""Characters per line of a step's description: longer settings wrap, so diagrams grow down, not across."""

HEADER = [
    f'  graph [fontname="{FONT}", fontsize=11, nodesep=0.3, ranksep=0.35];',
    f'  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="{FONT}", fontsize=11];',
    f'  edge [fontname="{FONT}", fontsize=9, color="#556677"];',
]
"""The attributes every lesson diagram starts with: one font, and a layout read top to bottom."""


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def wrap(line: str, width: int = LINE_WIDTH) -> list[str]:
    """A line of a label cut at spaces into lines of at most ``width`` characters (a longer word stays whole);
    the lines after the first are indented, so a wrapped setting reads as one.

    >>> wrap("between: impression_time + 0 seconds <= click_time <= impression_time + 20 seconds")
    ['between: impression_time + 0 seconds', '  <= click_time <= impression_time +', '  20 seconds']
    """
    lines: list[str] = []
    for word in line.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word if not lines else "  " + word)
    return lines


def _label(step: Step, notes: Sequence[str] = ()) -> str:
    """A step's label: its name and its kind (once, when the name is the kind) centred, then its settings and
    ``notes`` (what Spark's optimizer changes in it), wrapped and aligned left (DOT ends a centred line with
    ``\\n``, a left-aligned one with ``\\l``)."""
    title = [step.name] if step.kind == step.name else [step.name, step.kind]
    settings = [line for name, value in step.describe().items() for line in wrap(f"{name}: {value}")]
    settings += [line for note in notes for line in wrap(note)]
    text = "".join(line.replace('"', "'") + "\\n" for line in title)
    text += "".join(line.replace('"', "'") + "\\l" for line in settings)
    return text


def _color(step: Step) -> str:
    return COLORS.get(step.kind) or (COLORS["keyed"] if step.parallelism == "keyed" else None)


def _edge_label(edge) -> str:
    label = "hash by " + ", ".join(edge.key_columns) if edge.partition == "hash" else edge.partition
    return f"side output {edge.output}: {label}" if edge.output else label


def to_dot(flow: Dataflow, parallelism: int | None = None) -> str:
    """The dataflow as DOT text, read top to bottom: the logical plan, or with ``parallelism`` the physical one
    (each step a frame holding its description and its subtasks, one arrow per channel)."""
    lines = [f"digraph {_quote(flow.name)} {{", "  rankdir=TB;", *HEADER]
    if parallelism is None:
        for step in flow.steps:
            color = _color(step)
            fill = f", fillcolor={_quote(color)}" if color else ""
            lines.append(f'  {_quote(step.name)} [label="{_label(step, optimizer_notes(flow, step))}"{fill}];')
        for step in flow.steps:
            for edge in step.inputs:
                lines.append(
                    f"  {_quote(edge.upstream.name)} -> {_quote(step.name)} [label={_quote(_edge_label(edge))}];"
                )
    else:
        graph = physical_graph(flow, parallelism)
        for step in flow.steps:
            color = _color(step)
            fill = f", fillcolor={_quote(color)}" if color else ""
            # The description is a node beside the subtasks, not the frame's label: arrows go round nodes,
            # while they would cross a frame's label on their way in.
            lines.append(f"  subgraph {_quote('cluster_' + step.name)} {{")
            lines.append('    style="rounded"; color="#8899aa";')
            label = _label(step, optimizer_notes(flow, step))
            lines.append(f'    {{ rank=same; {_quote(step.name)} [shape=plaintext, style="", label="{label}"];')
            for subtask in graph.by_step[step.name]:
                lines.append(f'      {_quote(str(subtask))} [label="{subtask}"{fill}];')
            lines.append("    }")
            lines.append("  }")
        for subtask in graph.subtasks:
            for _partition, channels, edge in subtask.output.routes:
                for number, channel in enumerate(channels):  # the route's name once, on its first arrow
                    label = f" [label={_quote(_edge_label(edge))}]" if number == 0 else ""
                    lines.append(f"  {_quote(str(subtask))} -> {_quote(channel.receiver)}{label};")
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


def _wrapped(names: list[str], per_line: int = 5) -> str:
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


def _lines(*lines: str) -> str:
    """A node label of several centred lines (quotes made safe)."""
    return "\\n".join(line.replace('"', "'") for line in lines)


def _cell(text: str, **style) -> str:
    """One cell of an HTML-like DOT table, its text escaped and wrapped (``\\n`` starts a line); ``style`` gives
    attributes (``bgcolor``...)."""
    lines = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").split("\n")
    escaped = "<br/>".join(wrapped for line in lines for wrapped in wrap(line, 30))
    font = style.pop("color", None)
    if font:
        escaped = f'<font color="{font}">{escaped}</font>'
    attributes = "".join(f' {name.replace("_", "")}="{value}"' for name, value in style.items())
    return f"<td{attributes}>{escaped}</td>"


def recovery_timeline_dot(run, storage, name: str = "checkpoint-recovery") -> str:
    """A crash and its recovery as a timeline, read top to bottom: every batch each run started, with the
    watermark it ran with, the offsets log entry written before it read (``offsets/k``), the checkpoint written
    when it ended (``chk-k``, the commit), the crash, and the restart that restores the last checkpoint and runs
    the batch that was planned but never committed again, under the same id and watermark.

    Args:
        run: a traced ``recovery.RecoveredRun`` of the micro-batch model (``lesson.run(storage=..., trace=True)``).
        storage: the checkpoint storage it wrote to.
        name: the graph's name.

    >>> from ministream.checkpoints.storage import MemoryStorage
    >>> from ministream.lessons import get_lesson
    >>> storage = MemoryStorage()
    >>> dot = recovery_timeline_dot(get_lesson("checkpoint-recovery").run(storage=storage, trace=True), storage)
    >>> print(dot.splitlines()[-3])
    <tr><td></td><td>4</td><td>10:00:35</td><td>offsets/4: events up to 4</td><td bgcolor="#e3f4e1">chk-4 written</td><td>ran to the end</td></tr>
    """
    runs: list[list[int]] = []  # the batch ids each attempt ran, in order: a batch id that does not grow starts one
    for summary in run.trace.batches:
        if not runs or summary.batch_id <= runs[-1][-1]:
            runs.append([])
        runs[-1].append(summary.batch_id)
    committed = set(storage.checkpoint_ids())
    header = [
        "",
        "batch",
        "watermark",
        "offsets log: written\nbefore the batch reads\n(Spark: offsets/k)",
        "checkpoint: written when\nthe batch ends, the commit\n(Spark: commits/k)",
        "what happened",
    ]
    rows = ["<tr>" + "".join(_cell(text, bgcolor="#eeeeee") for text in header) + "</tr>"]
    for number, (attempt, batch_ids) in enumerate(zip(run.attempts, runs)):
        if attempt.restored_from is not None:
            rows.append(
                "<tr>"
                + _cell("restart", bgcolor="#fdf0d5")
                + _cell("", bgcolor="#fdf0d5")
                + _cell("", bgcolor="#fdf0d5")
                + _cell(
                    f"offsets/{batch_ids[0]} without chk-{batch_ids[0]}:\nbatch {batch_ids[0]} runs again",
                    bgcolor="#fdf0d5",
                )
                + _cell(f"restore chk-{attempt.restored_from}", bgcolor="#fdf0d5")
                + _cell("a new process, its state\nfrom the checkpoint", bgcolor="#fdf0d5")
                + "</tr>"
            )
        for position, batch_id in enumerate(batch_ids):
            planned = storage.offsets(batch_id) or {}
            watermark = planned.get("watermark")
            offsets = ", ".join(f"{source} up to {offset}" for source, offset in planned.get("offsets", {}).items())
            crashed = attempt.crash is not None and position == len(batch_ids) - 1
            if crashed:
                checkpoint, done = (
                    _cell("none: never committed", color="#c0392b"),
                    _cell(attempt.crash, color="#c0392b"),
                )
            else:
                again = attempt.restored_from is not None and position == 0
                checkpoint = _cell(f"chk-{batch_id} written", bgcolor="#e3f4e1") if batch_id in committed else _cell("")
                done = _cell(
                    "ran again, same id and watermark"
                    if again
                    else "ran"
                    if position < len(batch_ids) - 1
                    else "ran to the end"
                )
            rows.append(
                "<tr>"
                + _cell(("first run" if number == 0 else "restarted run") if position == 0 else "")
                + _cell(batch_id)
                + _cell("-" if watermark is None else "0 (none yet)" if watermark == 0 else format_clock(watermark))
                + _cell(f"offsets/{batch_id}: {offsets}" if planned else "")
                + checkpoint
                + done
                + "</tr>"
            )
    return "\n".join(
        [
            f"digraph {_quote(name)} {{",
            *HEADER,
            f'  label="{name}: a crash and its recovery, top to bottom"; labelloc=t;',
            '  "timeline" [shape=plaintext, style="", label=<<table border="0" cellborder="1" cellspacing="0" cellpadding="4">',
            *rows,
            "</table>>];",
            "}",
        ]
    )


def rescale_dot(before: dict[int, list], after: dict[int, list], step: str, name: str = "rescale") -> str:
    """A rescale as a picture: the subtasks of ``step`` before (top) and after (bottom), each with its range of
    key groups and the keys in its state, and an arrow for every range of key groups that moves.

    >>> print(rescale_dot({0: ["alice"]}, {0: [], 1: ["alice"]}, "counts").splitlines()[-1])
    }
    >>> [line.strip() for line in rescale_dot({0: ["alice"]}, {0: [], 1: ["alice"]}, "counts").splitlines() if "->" in line]
    ['"before_0" -> "after_0" [label="key groups 0-63"];', '"before_0" -> "after_1" [label="key groups 64-127"];']
    """
    lines = [
        f"digraph {_quote(name)} {{",
        "  rankdir=TB;",
        *HEADER,
        f'  label="{name}: key groups move, keys go with them"; labelloc=t;',
    ]
    for when, subtasks in (("before", before), ("after", after)):
        parallelism = len(subtasks)
        nodes = []
        for index, keys in subtasks.items():
            groups = key_group_range(index, parallelism)
            label = _lines(
                f"{step}[{index}] of {parallelism} ({when})",
                f"key groups {groups.start}-{groups.stop - 1}",
                *wrap("keys: " + (", ".join(map(str, keys)) or "none"), 30),
            )
            lines.append(f'  "{when}_{index}" [label="{label}"];')
            nodes.append(_quote(f"{when}_{index}"))
        lines.append(f"  {{ rank=same; {'; '.join(nodes)}; }}")
    old, new = len(before), len(after)
    for index in before:
        mine = key_group_range(index, old)
        for target in after:
            theirs = key_group_range(target, new)
            low, high = max(mine.start, theirs.start), min(mine.stop, theirs.stop)
            if low < high:
                lines.append(f'  "before_{index}" -> "after_{target}" [label="key groups {low}-{high - 1}"];')
    lines.append("}")
    return "\n".join(lines)


def changelog_dot(logs, positions: dict, name: str = "changelog") -> str:
    """Changelogs as a picture: each subtask's log as a row of its files (records, and snapshots in bold), and
    each checkpoint with an arrow to the record its position stops at and a dashed one to the snapshot a
    recovery from it starts from. ``logs``: a ``changelog.ChangelogStorage``; ``positions``: ``{checkpoint id:
    [LogPosition, ...]}``.

    >>> from ministream.state.changelog import ChangelogStorage, LogPosition
    >>> logs = ChangelogStorage(); logs.write("t/0", 1, "changelog", None); logs.write("t/0", 1, "snapshot", {})
    >>> [line.strip() for line in changelog_dot(logs, {0: [LogPosition("t/0", 1, 1)]}).splitlines() if line.strip().startswith('"chk-0" ->')]
    ['"chk-0" -> "t/0:1.changelog";', '"chk-0" -> "t/0:1.snapshot" [style=dashed];']
    """
    lines = [
        f"digraph {_quote(name)} {{",
        "  rankdir=LR;",
        *HEADER,
        f'  label="{name}: one log per subtask; a checkpoint keeps a position in each"; labelloc=t;',
    ]
    for log in logs.logs():
        files = logs.files(log)
        lines.append(f"  subgraph {_quote('cluster_' + log)} {{ label={_quote(log)};")
        for file in files:
            style = ", style=bold" if file.endswith(".snapshot") else ""
            lines.append(f"    {_quote(log + ':' + file)} [label={_quote(file)}{style}];")
        lines += [
            f"    {_quote(log + ':' + a)} -> {_quote(log + ':' + b)} [style=invis];"
            for a, b in itertools.pairwise(files)
        ]
        lines.append("  }")
    for checkpoint_id, found in sorted(positions.items()):
        lines.append(f'  "chk-{checkpoint_id}" [shape=note];')
        for position in found:
            lines.append(f'  "chk-{checkpoint_id}" -> {_quote(f"{position.log}:{position.version}.changelog")};')
            if position.snapshot is not None:
                target = _quote(f"{position.log}:{position.snapshot}.snapshot")
                lines.append(f'  "chk-{checkpoint_id}" -> {target} [style=dashed];')
    lines.append("}")
    return "\n".join(lines)


def changelog_diagram() -> str:
    """The changelog lesson's run without a crash at parallelism 2, a snapshot every 3 records, its last two
    checkpoints (what ``retain=2`` keeps), drawn by :func:`changelog_dot`."""
    lesson = get_lesson("changelog")
    storage, logs = MemoryStorage(retain=2), ChangelogStorage()
    backends = ChangelogBackends("memory", logs, materialize_every=3, retain=2)
    run_with_recovery(
        lesson.pipeline(lesson.default_script, lesson.resolve_params()),
        output_mode="update",
        parallelism=2,
        storage=storage,
        state_backend=backends,
    )
    positions = {
        checkpoint_id: [
            snapshot["keyed"]
            for _, snapshot in sorted(load_checkpoint(storage, checkpoint_id).operators["totals"].items())
        ]
        for checkpoint_id in storage.checkpoint_ids()
    }
    return changelog_dot(logs, positions)


def _rows_in(script) -> int:
    """How many rows a script holds (a list of batches, or ``{input: batches}``)."""
    inputs = script.values() if isinstance(script, dict) else [script]
    return sum(len(batch) for batches in inputs for batch in batches)


def _spark_read(row: dict) -> str:
    """What Spark's reader did to one row of a bad line: the fields it read as null, or that it read it all."""
    nulls = [name for name, value in row.items() if value is None and name not in ("batch", "stream")]
    return f"{', '.join(nulls)} null" if nulls else "read whole"


def _first_lines(text: str, count: int) -> list[str]:
    """The first ``count`` lines of ``text`` wrapped (:func:`wrap`), the last one ending in "..." when there is more.

    >>> _first_lines("line 5: field 'value': 'x' is not a number: give a number like 1.5", 1)
    ["line 5: field 'value': 'x' is not a ..."]
    """
    lines = wrap(text)
    return lines if len(lines) <= count else [*lines[: count - 1], lines[count - 1] + " ..."]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def bad_lines_dot(both, file_name: str, name: str = "bad-lines") -> str:
    """An events file read two ways (``spark/permissive.py``'s ``BothReadings``): ministream's reader, which
    sets each bad line aside with its reason, and Spark's JSON reader, which reads it into the pipeline with a
    null in each field it cannot read; each bad line is a line in the box of each reader's verdict.

    >>> from types import SimpleNamespace as Of
    >>> reading = Of(letter=Of(line=4, reason="field 'key': missing"),
    ...              spark=Of(line=4, rows=[{"batch": 0, "ts": 1000, "key": None}], corrupt=False))
    >>> both = Of(script=[[{"ts": 5, "key": "a"}]], readings=[reading], spark_script=[[{}, {}]])
    >>> for line in bad_lines_dot(both, "e.jsonl").splitlines():
    ...     if "line 4" in line:
    ...         print(line.strip())
    "dead" [label="dead letters: 1 line\\nline 4: field 'key': missing\\l", fillcolor="#fbe3e3"];
    "spark rows" [label="into the pipeline: 2 rows\\nline 4: key null\\l", fillcolor="#fdf0d5"];
    """
    letters = [text for r in both.readings for text in _first_lines(f"line {r.letter.line}: {r.letter.reason}", 2)]
    spark = [
        f"line {r.spark.line}: {_spark_read(row)}{' (malformed)' if r.spark.corrupt else ''}"
        for r in both.readings
        for row in r.spark.rows or [{}]
    ]
    bad, kept = len(both.readings), _rows_in(both.script)  # a good line is one row of ministream's script
    spark_title = "into the pipeline: " + _plural(_rows_in(both.spark_script), "row")

    def label(title: str, lines: list[str]) -> str:
        return '"' + title + "\\n" + "".join(line.replace('"', "'") + "\\l" for line in lines) + '"'

    lines = [
        f"digraph {_quote(name)} {{",
        "  rankdir=TB;",
        *HEADER,
        f'  "file" [label={_quote(file_name + ": " + _plural(kept + bad, "line") + f", {bad} bad")}, shape=note];',
        '  "ministream" [label="ministream\'s reader\\nstrict: a line is read whole, or set aside"];',
        '  "spark" [label="Spark\'s JSON reader (PERMISSIVE)\\na null where a field does not fit"];',
        f'  "ministream rows" [label="into the pipeline: {_plural(kept, "row")}", fillcolor="{COLORS["source"]}"];',
        f'  "dead" [label={label("dead letters: " + _plural(bad, "line"), letters)}, fillcolor="#fbe3e3"];',
        f'  "spark rows" [label={label(spark_title, spark)}, fillcolor="{COLORS["keyed"]}"];',
        '  "file" -> "ministream";',
        '  "file" -> "spark";',
        '  "ministream" -> "ministream rows" [label="good lines"];',
        '  "ministream" -> "dead" [label="bad lines"];',
        '  "spark" -> "spark rows" [label="every line"];',
        "}",
    ]
    return "\n".join(lines)


def render_svg(dot_text: str, path: str | Path) -> Path:
    """Render DOT text to an SVG file with Graphviz's ``dot`` (installed by ``make setup``)."""
    import graphviz

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(graphviz.Source(dot_text).pipe(format="svg"))
    return path


SETTING_DIAGRAMS = {
    "outer-join.max-window.svg": ("outer-join", {"window": "max"}),
    "deduplication.keep-id.svg": ("deduplication", {"keep": "id"}),
    "stream-join.campaign.svg": ("stream-join", {"campaign": "a"}),
    "enrichment-join.min-fare.svg": ("enrichment-join", {"min_fare": 5}),
    "device-sessions.per-window.svg": ("device-sessions", {"per_window": 30_000}),
}
"""Lesson settings drawn beside the lesson's own diagram, by file name. The first four are plans Spark's
optimizer changes: the outer join under a window of max alone, which Spark removes
(``core/outer_join_elimination.py``), the deduplication with only ``event_id`` after it, whose ``ts`` Spark prunes
(``core/pruning.py``), the join followed by a filter on one ad, which Spark runs below both watermarks
(``operators/pushdown.py``), and the stream-static join followed by a filter on the fare, which Spark runs below
the trips' watermark; the step's label says what changes (``planner.optimizer_notes``). The last is a window
after a process step, over its ``event_time_column``."""


def setting_dots() -> dict[str, str]:
    """The DOT text of each of :data:`SETTING_DIAGRAMS`, by file name."""
    dots = {}
    for file_name, (lesson_name, params) in SETTING_DIAGRAMS.items():
        lesson = get_lesson(lesson_name)
        dots[file_name] = to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params(params)))
    return dots


def render_lessons(directory: str | Path = "diagrams", parallelism: int = 2) -> list[Path]:
    """Render every lesson's dataflow (logical, and physical at ``parallelism``) into ``directory``, the
    lesson settings drawn beside them (:data:`SETTING_DIAGRAMS`), and the checkpoint lessons' pictures of what they teach: the crash and restore as a timeline, the barriers in
    flight, the key groups that move in a rescale."""

    written = []
    for lesson in all_lessons():
        flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
        written.append(render_svg(to_dot(flow), Path(directory) / f"{lesson.name}.svg"))
        written.append(render_svg(to_dot(flow, parallelism), Path(directory) / f"{lesson.name}.physical.svg"))
    written += [render_svg(dot, Path(directory) / name) for name, dot in setting_dots().items()]
    written += write_barrier_diagrams(directory)
    storage = MemoryStorage()
    recovered = get_lesson("checkpoint-recovery").run(storage=storage, trace=True)
    timeline = recovery_timeline_dot(recovered, storage)
    written.append(render_svg(timeline, Path(directory) / "checkpoint-recovery.timeline.svg"))
    before, after = keys_moved()
    written.append(render_svg(rescale_dot(before, after, "counts"), Path(directory) / "rescale.keygroups.svg"))
    written.append(render_svg(changelog_diagram(), Path(directory) / "changelog.logs.svg"))
    written.append(render_svg(architecture_dot(), Path(directory) / "architecture.svg"))
    return written


BARRIER_MOMENTS = 3
"""How many moments of the barrier lesson's run are drawn: enough to see barriers travel and inputs held back."""


def write_barrier_diagrams(directory: str | Path = "diagrams") -> list[Path]:
    """Render the first :data:`BARRIER_MOMENTS` held-back moments of the barrier lesson's ``ALIGNMENT_SEED`` run:
    the physical graph with the rows and barriers waiting in each channel (``checkpoints.barriers.barriers_dot``),
    to ``barrier-alignment.barriers.svg``, ``barrier-alignment.barriers-2.svg``..."""
    pictures = checkpointed_run(seed=ALIGNMENT_SEED, pictures=True).pictures[:BARRIER_MOMENTS]
    names = ["barrier-alignment.barriers.svg"]
    names += [f"barrier-alignment.barriers-{number}.svg" for number in range(2, len(pictures) + 1)]
    return [render_svg(dot, Path(directory) / name) for (_caption, dot), name in zip(pictures, names)]
