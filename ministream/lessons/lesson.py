"""A lesson: one concept as a ministream pipeline and its PySpark twin, run on the same script of events.

A lesson module defines four things and hands them to :class:`Lesson`:

- ``pipeline(script, params)``: the ministream :class:`~ministream.core.plan.Dataflow`;
- ``twin(inputs, params)``: the PySpark streaming DataFrame that computes the same thing, built from the
  lesson's inputs as streaming DataFrames (real Structured Streaming code: it runs unchanged on a cluster);
- the fields of its events, its parameters with defaults, and its default script;
- the output mode it runs in (a parameter where the lesson teaches the difference).

:meth:`Lesson.run` runs ministream, :meth:`Lesson.run_twin` runs Spark, and
:func:`ministream.lessons.compare_lesson` sets them side by side.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import attrs

from ministream.core.events import Field, read_events
from ministream.core.queries import query_of
from ministream.errors import PipelineError
from ministream.models.continuous import run_continuous
from ministream.models.microbatch import run_microbatch
from ministream.time.units import TimeFormatError, format_duration, parse_duration

SPARK_TYPES = {str: "STRING", float: "DOUBLE", int: "BIGINT"}


@attrs.frozen
class Param:
    """A setting a workshop can change with ``--param NAME=VALUE``: a duration, an int, or a choice."""

    name: str
    default: Any
    help: str
    kind: str = "duration"  # "duration" (ms), "int", or "choice"
    choices: tuple[str, ...] = ()
    signed: bool = False
    """A duration that may be zero or negative (a window offset); others must be longer than zero."""

    def parse(self, text) -> Any:
        """Read a value given as text (``"10 seconds"``) into the parameter's type (10000); a duration needs its
        unit, since a bare number could mean seconds as well as milliseconds.

        >>> Param("size", 10_000, "the length of each window").parse("10 seconds")
        10000
        >>> Param("size", 10_000, "the length of each window").parse("10")
        Traceback (most recent call last):
        ...
        ministream.errors.PipelineError: --param size: '10' has no unit: write it like '10 seconds' or '10 milliseconds'
        """
        if self.kind == "duration":
            if isinstance(text, str) and text.strip().lstrip("-").isdigit() and int(text) != 0:
                number = text.strip()
                raise PipelineError(
                    f"--param {self.name}: {text!r} has no unit: write it like '{number} seconds' or "
                    f"'{number} milliseconds'"
                )
            try:
                value = parse_duration(text)
            except TimeFormatError as error:
                raise PipelineError(f"--param {self.name}: {error}") from None
            if self.signed:
                return value
            if value <= 0 and self.name != "delay":
                raise PipelineError(f"--param {self.name}: must be longer than zero, got {text!r}")
            if value < 0:
                raise PipelineError(f"--param {self.name}: cannot be negative, got {text!r}")
            return value
        if self.kind == "int":
            try:
                return int(text)
            except ValueError:
                raise PipelineError(f"--param {self.name}: {text!r} is not a whole number") from None
        if text not in self.choices:
            raise PipelineError(f"--param {self.name}: must be one of {', '.join(self.choices)}, not {text!r}")
        return text

    def show(self, value) -> str:
        """The value as a person writes it (``10 seconds``)."""
        return format_duration(value) if self.kind == "duration" else str(value)


@attrs.define
class Lesson:
    """A concept, its ministream pipeline, its PySpark twin and the events they both run on."""

    name: str
    title: str
    pipeline: Callable[[Any, dict], Any]
    twin: Callable[[dict, dict], Any] | None
    """The PySpark twin; ``None`` for a concept Spark does not have (operator state), whose checks are then
    properties of ministream's runs rather than a comparison."""
    fields: list[Field]
    default_script: Any
    params: list[Param] = attrs.field(factory=list)
    inputs: tuple[str, ...] = ("events",)
    output_mode: Callable[[dict], str] | str = "append"
    watermark_policy: Callable[[dict], str] | str = "min"
    """``"min"`` or ``"max"`` (Spark's ``spark.sql.streaming.multipleWatermarkPolicy``), or a function of the
    parameters where the lesson lets a workshop choose."""
    spark_conf: Callable[[dict], dict] | dict = attrs.field(factory=dict)
    """Spark settings for the twin's query, or a function of the parameters that gives them."""
    state_backend: Callable[[dict], str] | None = None
    """Where the lesson's keyed state lives, as a function of its parameters (``state/backends.py``); ``None``:
    in memory, unless a run asks for another."""
    doc: str = ""
    random_script: Callable | None = None
    """``random_script(rng, params)``: a random script for this lesson (for ``ministream fuzz``)."""
    batch_timestamps: Callable | None = None
    """``batch_timestamps(script, params)``: the processing time of each batch for ministream's own runs
    (lessons that use processing time); ``None``: the lesson's runs have no processing time."""
    replay_spark_clock: bool = False
    """Processing time cannot be scripted in Spark (each batch reads the wall clock): when ``True``,
    ``compare_lesson`` runs the twin first and then ministream with the batch timestamps Spark recorded."""
    twin_source: Callable[[], str] | None = None
    """The twin's PySpark code as text, for a twin that a compiler wrote (a pipeline file's,
    ``lessons/pipeline_file.py``); ``None``: the source of the ``twin`` function."""
    outputs: tuple[str, ...] = ("output",)
    """The sinks of the pipeline whose rows are compared with the twin's, each its own query in Spark; ``twin``
    is the first one's query."""
    twin_of_output: Callable[[str], Any] | None = None
    """A pipeline with several outputs: the twin of each output's query (it has ``conf`` and ``source`` too,
    as a pipeline file's compiled twin has)."""
    source_file: str | None = None
    """The pipeline file the lesson was loaded from, as the command line named it (``None``: a lesson of the
    package, named by its name): what a command that replays it names."""

    def of_output(self, output: str) -> Lesson:
        """The lesson as one of its outputs: its pipeline runs only the query that feeds that output (as Spark
        runs one ``writeStream``, ``core/queries.py``), with that query's twin, Spark settings and code: what a
        command asked for one output (``--output NAME``) runs, recovers from a crash and compares.

        >>> from ministream.lessons import get_lesson
        >>> get_lesson("late-data").of_output("output").outputs
        ('output',)
        >>> get_lesson("late-data").of_output("alerts")
        Traceback (most recent call last):
        ...
        ministream.errors.PipelineError: lesson 'late-data' has no output 'alerts'; it has: output
        """
        if output not in self.outputs:
            raise PipelineError(f"lesson {self.name!r} has no output {output!r}; it has: {', '.join(self.outputs)}")
        if len(self.outputs) == 1:
            return self
        if self.twin_of_output is None:
            raise PipelineError(f"lesson {self.name!r} has several outputs, and no twin for each")
        twin = self.twin_of_output(output)
        whole = self.pipeline

        def pipeline(script, params):
            return query_of(whole(script, params), output)

        return attrs.evolve(
            self,
            pipeline=pipeline,
            twin=twin,
            spark_conf=twin.conf,
            twin_source=twin.source,
            outputs=(output,),
            twin_of_output=None,
        )

    def twin_code(self) -> str:
        """The PySpark code of the twin: what ``ministream twin LESSON`` prints.

        >>> from ministream.lessons import get_lesson
        >>> print(get_lesson("running-aggregation").twin_code().splitlines()[0])
        def twin(inputs, params):
        """
        if self.twin_source is not None:
            return self.twin_source()
        return textwrap.dedent(inspect.getsource(self.twin))

    def resolve_params(self, overrides: dict | None = None) -> dict:
        """The lesson's parameters: defaults, with ``overrides`` (text or values) applied; unknown names are
        refused with the list of known ones."""
        values = {param.name: param.default for param in self.params}
        known = {param.name: param for param in self.params}
        for name, value in (overrides or {}).items():
            if name not in known:
                have = ", ".join(known) or "no parameters"
                raise PipelineError(f"lesson {self.name!r} has no parameter {name!r}; it has: {have}")
            values[name] = known[name].parse(value) if isinstance(value, str) else value
        return values

    def mode(self, params: dict) -> str:
        """The output mode this lesson runs in with these parameters."""
        return self.output_mode(params) if callable(self.output_mode) else self.output_mode

    def policy(self, params: dict) -> str:
        """The multiple-watermark policy this lesson runs with under these parameters."""
        return self.watermark_policy(params) if callable(self.watermark_policy) else self.watermark_policy

    def read_script(self, path, dead_letters: list | None = None) -> Any:
        """Read a user's events file for this lesson (JSON Lines, see ``ministream.core.events``); with a
        ``dead_letters`` list, bad lines are set aside there instead of stopping the run."""
        streams = list(self.inputs) if len(self.inputs) > 1 else None
        return read_events(path, self.fields, streams, dead_letters=dead_letters)

    def read_both_ways(self, path, master: str | None = None):
        """Read a user's events file as ministream does, its bad lines set aside as dead letters, and as Spark's
        own JSON reader would, every line read and a null where a field cannot be (``spark/permissive.py``):
        each dead letter beside Spark's reading of its line, and the batches the twin would get."""
        from ministream.spark import spark_session
        from ministream.spark.permissive import read_both_ways

        streams = list(self.inputs) if len(self.inputs) > 1 else None
        return read_both_ways(spark_session(master), path, self.spark_schema(), self.fields, streams)

    def spark_schema(self) -> str:
        """The schema of the lesson's events for the Spark source: ``ts`` then the lesson's fields."""
        columns = ["ts TIMESTAMP"] + [f"{field.name} {SPARK_TYPES[field.kind]}" for field in self.fields]
        return ", ".join(columns)

    def run(
        self,
        script=None,
        params: dict | None = None,
        *,
        parallelism: int = 1,
        seed: int = 0,
        trace: bool = False,
        model: str = "microbatch",
        batch_timestamps: list[int] | None = None,
        state_backend=None,
        after_batch=None,
    ):
        """Run the ministream pipeline on ``script`` (the default script when ``None``); ``batch_timestamps``
        (micro-batch model) overrides the lesson's own processing times; ``state_backend``: where keyed state
        lives (``"memory"``, ``"rocksdb"``, ``"redis"``: ``state/backends.py``); ``after_batch``: called after
        every micro-batch with the batch and the graph (``models/state_history.StateHistory``)."""

        values = self.resolve_params(params)
        script = self.default_script if script is None else script
        flow = self.pipeline(script, values)
        if state_backend is None and self.state_backend is not None:
            state_backend = self.state_backend(values)
        if model == "continuous":
            return run_continuous(
                flow,
                parallelism=parallelism,
                seed=seed,
                trace=trace,
                output_mode=self.mode(values),
                state_backend=state_backend,
            )
        if batch_timestamps is None and self.batch_timestamps is not None:
            batch_timestamps = self.batch_timestamps(script, values)
        return run_microbatch(
            flow,
            output_mode=self.mode(values),
            parallelism=parallelism,
            seed=seed,
            watermark_policy=self.policy(values),
            trace=trace,
            batch_timestamps=batch_timestamps,
            state_backend=state_backend,
            after_batch=after_batch,
        )

    def run_twin(
        self, script=None, params: dict | None = None, *, master: str | None = None, checkpoint_dir: str | None = None
    ):
        """Run the PySpark twin on the same script and return its batches (``checkpoint_dir``: keep the query's
        checkpoint there, to read its state afterwards; a temporary one otherwise)."""
        from ministream.spark import run_query, scripted_stream, spark_session

        if self.twin is None:
            raise PipelineError(f"lesson {self.name!r} has no Spark twin: Spark has no such concept")
        values = self.resolve_params(params)
        script = self.default_script if script is None else script
        spark = spark_session(master)
        by_input = script if len(self.inputs) > 1 else {self.inputs[0]: script}
        length = max(len(batches) for batches in by_input.values())
        frames = {
            name: scripted_stream(spark, self.spark_schema(), _padded(by_input[name], length)) for name in self.inputs
        }
        own = self.spark_conf(values) if callable(self.spark_conf) else self.spark_conf
        conf = {"spark.sql.streaming.multipleWatermarkPolicy": self.policy(values), **own}
        return run_query(
            self.twin(frames, values),
            self.mode(values),
            query_name=_query_name(self.name),
            conf=conf,
            checkpoint_dir=checkpoint_dir,
        )


def _padded(batches: list, length: int) -> list:
    return list(batches) + [[] for _ in range(length - len(batches))]


def _query_name(name: str) -> str:
    return "ministream_" + name.replace("-", "_")


BASE_TIME = 1_704_103_200_000
"""2024-01-01T10:00:00Z: the default scripts' events happen a few seconds after it."""


def event(second: float, key: str, value: float = 1.0, **fields) -> dict:
    """A default-script row ``second`` seconds after 10:00:00 on 2024-01-01 (UTC).

    >>> event(5, "a", 2)
    {'ts': 1704103205000, 'key': 'a', 'value': 2.0}
    """
    return {"ts": BASE_TIME + round(second * 1000), "key": key, "value": float(value), **fields}
