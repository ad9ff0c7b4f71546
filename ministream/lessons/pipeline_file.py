"""A pipeline file: your own pipeline, in a Python file of its own, run and compared like a lesson.

A pipeline file defines the fields of its events and a function that takes the stream of events and returns
the stream to output (or a dict of them, ``{"totals": totals, "alerts": alerts}``: several outputs, each its own
sink and, in Spark, its own query); ministream adds the source and the sinks, and compiles the plan to its PySpark twin
(``ministream/spark/compiler/``), so every command that takes a lesson takes the file's path instead
(``ministream compare my_pipeline.py --events my-events.jsonl``)::

    from ministream import Count, Sum, Tumbling

    FIELDS = {"key": str, "value": float}          # the events' own columns; every event also has ts

    def pipeline(events):
        watermarked = events.with_watermark("watermark", "ts", "5 seconds")
        return watermarked.key_by("key").window("totals", Tumbling("10 seconds"), count=Count(), sum=Sum("value"))

Optional names: ``OUTPUT_MODE`` (``"append"``, the default, ``"update"`` or ``"complete"``); ``INPUTS``, the
names of two inputs that share the ``FIELDS`` (``INPUTS = ("left", "right")`` with ``def pipeline(left,
right)``; an events file then says which input each event is for with ``stream``); ``WATERMARK_POLICY``
(``"min"`` or ``"max"``: Spark's ``spark.sql.streaming.multipleWatermarkPolicy``); ``EVENTS``, an events file
(relative to the pipeline file) to run on when the command gives no ``--events``. A file that lacks a name or
gets one wrong is refused in one line that names the file and what is missing.

>>> lesson = pipeline_lesson('''
... from ministream import Count
... FIELDS = {"key": str}
... def pipeline(events):
...     return events.key_by("key").aggregate("counts", count=Count())
... OUTPUT_MODE = "update"
... ''', "counts.py")
>>> lesson.name, lesson.inputs, lesson.mode({})
('counts', ('events',), 'update')
>>> [batch.rows for batch in lesson.run([[{"ts": 0, "key": "a"}, {"ts": 1, "key": "a"}]]).output()]
[[{'key': 'a', 'count': 2}]]
>>> pipeline_lesson("FIELDS = {'key': str}", "empty.py")
Traceback (most recent call last):
...
ministream.lessons.pipeline_file.PipelineFileError: empty.py: no function pipeline(events): define one that takes the stream of events and returns the stream to output
"""

from __future__ import annotations

import inspect
import traceback
from pathlib import Path
from typing import Any

from ministream.core.events import Field, read_events
from ministream.core.plan import Dataflow, Stream
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.errors import PipelineError
from ministream.lessons.lesson import Lesson

OUTPUT_MODES = ("append", "update", "complete")
POLICIES = ("min", "max")
KINDS = {str: "str", float: "float", int: "int"}


class PipelineFileError(PipelineError):
    """A pipeline file that cannot be loaded: the file, then what is missing or wrong, in one line."""


def is_pipeline_file(name: str) -> bool:
    """Whether a command's LESSON argument is the path of a pipeline file rather than a lesson's name.

    >>> is_pipeline_file("my_pipeline.py"), is_pipeline_file("tumbling-window")
    (True, False)
    """
    return name.endswith(".py")


def load_pipeline_file(path: str | Path) -> Lesson:
    """The lesson a pipeline file defines (see the module's docstring for the file's shape)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PipelineFileError(
            f"{path}: there is no such pipeline file (paths are read from the folder the command runs in)"
        ) from None
    except (IsADirectoryError, UnicodeDecodeError) as error:
        raise PipelineFileError(f"{path}: cannot be read as a Python file ({error.__class__.__name__})") from None
    return pipeline_lesson(text, str(path))


def pipeline_lesson(text: str, filename: str) -> Lesson:
    """The lesson of a pipeline file's text (``filename`` names it in errors and gives the lesson its name)."""
    namespace = _execute(text, filename)
    inputs = _inputs(namespace, filename)
    fields = _fields(namespace, filename)
    build = _pipeline_function(namespace, filename, inputs)
    output_mode = _choice(namespace, "OUTPUT_MODE", OUTPUT_MODES, "append", filename)
    policy = _choice(namespace, "WATERMARK_POLICY", POLICIES, "min", filename)
    name = Path(filename).stem
    if not name.isidentifier():
        raise PipelineFileError(
            f"{filename}: name the file like a Python module (letters, digits and _), e.g. my_pipeline.py"
        )
    doc = inspect.cleandoc(namespace.get("__doc__") or "")
    default_script = _default_events(namespace, filename, fields, inputs)

    def pipeline(script, params) -> Dataflow:
        if script is None:
            raise PipelineFileError(
                f"{filename}: no events to run on: give --events FILE (JSON Lines, see the README), or name a file "
                'in the pipeline file with EVENTS = "my-events.jsonl"'
            )
        return build_flow(name, build, script, inputs, fields, filename)

    empty = {input_name: [] for input_name in inputs} if len(inputs) > 1 else []
    plan = build_flow(name, build, empty, inputs, fields, filename)  # the steps, whatever the events
    outputs = tuple(step.name for step in plan.sinks)
    twin = CompiledTwinOf(lambda: pipeline(empty, {}), fields, inputs, output_mode, policy, filename, outputs[0])

    return Lesson(
        name=name,
        title=doc.splitlines()[0] if doc else f"the pipeline of {filename}",
        pipeline=pipeline,
        twin=twin,
        fields=fields,
        default_script=default_script,
        inputs=inputs,
        output_mode=output_mode,
        watermark_policy=policy,
        spark_conf=twin.conf,
        doc=doc,
        twin_source=twin.source,
        outputs=outputs,
        twin_of_output=twin.for_output,
        source_file=filename,
    )


def build_flow(
    name: str, build, script, inputs: tuple[str, ...], fields: list[Field], filename: str = "<pipeline>"
) -> Dataflow:
    """The dataflow of a pipeline function on ``script``: a source per input (its columns ``ts`` and the
    fields, so that the plan can check a column's name as it is built), the function's steps, the sink
    ``output``, or a sink per output when it returns a dict of them (a function that fails says so with the
    file's line)."""
    flow = Dataflow(name)
    by_input = script if len(inputs) > 1 else {inputs[0]: script}
    columns = ("ts", *(field.name for field in fields))
    streams = [
        flow.source(input_name, ScriptedSource(by_input.get(input_name, []), columns=columns)) for input_name in inputs
    ]
    call = f"pipeline({', '.join(inputs)})"
    try:
        result = build(*streams)
    except PipelineError as error:
        raise PipelineFileError(f"{filename}: {error}") from None
    except Exception as error:  # the user's code failed: say where, in one line
        raise PipelineFileError(f"{filename}{_line_in(error, filename)}: {call} failed: {_one_line(error)}") from None
    for output, stream in _outputs(result, call, filename).items():
        if any(step.name == output for step in flow.steps):
            raise PipelineFileError(
                f"{filename}: {call} returned an output named {output!r}, the name of one of its steps: an output "
                "is a step too (its sink), so name it otherwise"
            )
        stream.sink(output, CollectingSink())
    return flow


def _outputs(result, call: str, filename: str) -> dict[str, Stream]:
    """What a pipeline function returned, as ``{sink name: stream}``: one stream goes to the sink ``output``;
    a dict of streams, each to the sink its key names (each sink is its own query in Spark)."""
    if isinstance(result, dict) and result:
        for output, stream in result.items():
            if not isinstance(output, str) or not output.isidentifier():
                raise PipelineFileError(
                    f"{filename}: {call} returned an output named {output!r}: name each output like a Python "
                    'variable, like {"totals": totals, "alerts": alerts}'
                )
            _check_stream(stream, f"{call} returned, as output {output!r},", filename)
        return dict(result)
    _check_stream(result, f"{call} returned", filename)
    return {"output": result}


def _check_stream(stream, returned: str, filename: str) -> None:
    if not isinstance(stream, Stream):
        kind = "a keyed stream: add a step after key_by(...)" if type(stream).__name__ == "KeyedStream" else None
        raise PipelineFileError(
            f"{filename}: {returned} {kind or repr(stream)}, not a stream: return the stream to output "
            "(the last step), or a dict of them"
        )


class CompiledTwinOf:
    """A pipeline file's PySpark twin, compiled from its plan by ``ministream/spark/compiler/`` when first
    needed (the engine's own runs need no PySpark): call it as a lesson's twin; :meth:`conf` and
    :meth:`source` give the Spark settings it needs and its PySpark code as text."""

    def __init__(
        self,
        plan,
        fields: list[Field],
        inputs: tuple[str, ...],
        output_mode: str,
        policy: str,
        filename: str,
        output: str = "output",
    ):
        self.plan = plan  # () -> Dataflow: the file's plan on empty inputs (the same steps whatever the events)
        self.fields, self.inputs, self.output_mode, self.filename = fields, inputs, output_mode, filename
        self.policy = policy
        self.output = output  # the sink whose query this twin is
        self._compiled: Any = None

    def for_output(self, output: str) -> CompiledTwinOf:
        """The twin of another output of the file: the query that feeds that sink, compiled on its own."""
        if output == self.output:
            return self
        return CompiledTwinOf(self.plan, self.fields, self.inputs, self.output_mode, self.policy, self.filename, output)

    def compiled(self):
        """The compiled twin (``CompiledTwin``: ``source``, ``twin``, ``conf``), compiled once."""
        if self._compiled is None:
            from ministream.spark.compiler import CompileError, compile_flow

            try:
                self._compiled = compile_flow(
                    self.plan(),
                    {name: list(self.fields) for name in self.inputs},
                    output_mode=self.output_mode,
                    sink=self.output,
                    watermark_policy=self.policy,
                )
            except CompileError as error:
                raise PipelineFileError(f"{self.filename}: {error}") from None
        return self._compiled

    def __call__(self, inputs: dict, params: dict):
        return self.compiled().twin(inputs, params)

    def conf(self, params: dict) -> dict:
        """The Spark settings the compiled twin needs: the file's watermark policy, transformWithState's state
        store..."""
        return dict(self.compiled().conf)

    def source(self) -> str:
        """The compiled twin's PySpark code."""
        return self.compiled().source


# -- reading the file's names -------------------------------------------------------------------------------------


def _execute(text: str, filename: str) -> dict:
    """The names the file defines, after running it (a syntax error or a failing line is one line)."""
    namespace: dict = {"__name__": f"pipeline_file_{Path(filename).stem}", "__file__": filename}
    try:
        code = compile(text, filename, "exec")
    except SyntaxError as error:
        raise PipelineFileError(f"{filename} line {error.lineno}: {error.msg}") from None
    try:
        exec(code, namespace)
    except Exception as error:
        raise PipelineFileError(f"{filename}{_line_in(error, filename)}: {_one_line(error)}") from None
    return namespace


def _inputs(namespace: dict, filename: str) -> tuple[str, ...]:
    inputs = namespace.get("INPUTS", ("events",))
    if isinstance(inputs, str):
        inputs = (inputs,)
    if (
        not isinstance(inputs, (tuple, list))
        or not 1 <= len(inputs) <= 2
        or not all(isinstance(name, str) and name.isidentifier() for name in inputs)
        or len(set(inputs)) != len(inputs)
    ):
        raise PipelineFileError(
            f'{filename}: INPUTS names one or two inputs, like INPUTS = ("left", "right"), not {inputs!r}'
        )
    return tuple(inputs)


def _fields(namespace: dict, filename: str) -> list[Field]:
    if "FIELDS" not in namespace:
        raise PipelineFileError(
            f"{filename}: no FIELDS: name the events' own columns and their types, like "
            'FIELDS = {"key": str, "value": float} (every event has its time, ts, too)'
        )
    fields = namespace["FIELDS"]
    if not isinstance(fields, dict) or not fields:
        raise PipelineFileError(f'{filename}: FIELDS is a dict of column to type, like {{"key": str}}, not {fields!r}')
    for name, kind in fields.items():
        if not isinstance(name, str) or not name.isidentifier() or name in ("ts", "batch", "stream"):
            raise PipelineFileError(
                f"{filename}: FIELDS: {name!r} cannot be a column (ts, batch and stream are the events file's own)"
            )
        if kind not in KINDS:
            raise PipelineFileError(f"{filename}: FIELDS[{name!r}] is {kind!r}: a column is str, float or int")
    return [Field(name, kind) for name, kind in fields.items()]


def _pipeline_function(namespace: dict, filename: str, inputs: tuple[str, ...]):
    function = namespace.get("pipeline")
    wanted = f"pipeline({', '.join(inputs)})"
    if not callable(function):
        stream = "the stream of events" if len(inputs) == 1 else "a stream per input"
        raise PipelineFileError(
            f"{filename}: no function {wanted}: define one that takes {stream} and returns the stream to output"
        )
    try:
        inspect.signature(function).bind(*inputs)
    except TypeError:
        raise PipelineFileError(
            f"{filename}: pipeline takes one stream per input, in the order of INPUTS: def {wanted}"
        ) from None
    return function


def _choice(namespace: dict, name: str, choices: tuple[str, ...], default: str, filename: str) -> str:
    value = namespace.get(name, default)
    if value not in choices:
        raise PipelineFileError(f"{filename}: {name} is one of {', '.join(map(repr, choices))}, not {value!r}")
    return value


def _default_events(namespace: dict, filename: str, fields: list[Field], inputs: tuple[str, ...]):
    """The script of the file's ``EVENTS`` file (relative to the pipeline file), or ``None``."""
    events = namespace.get("EVENTS")
    if events is None:
        return None
    if not isinstance(events, str):
        raise PipelineFileError(f'{filename}: EVENTS names an events file, like EVENTS = "my-events.jsonl"')
    return read_events(Path(filename).parent / events, fields, list(inputs) if len(inputs) > 1 else None)


def _line_in(error: BaseException, filename: str) -> str:
    """`` line N`` of the deepest frame of the traceback that is in the pipeline file, or nothing."""
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == filename]
    return f" line {lines[-1]}" if lines else ""


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
