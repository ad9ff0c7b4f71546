"""The Spark side of the conformance suite: a case's steps driven through its PySpark twin, live.

The inputs of a case are one streaming source: Spark's file source over a folder of Parquet files, one file
per ``AddData`` (``maxFilesPerTrigger=1``), so that each ``AddData`` is one micro-batch, as a ``MemoryStream``
makes it in Spark's own tests. A case with several inputs writes them all into the same files, each row
tagged with its input in a column ``__input`` (and its columns prefixed with the input's name); the twin
gets each input as ``files.where(__input = name)``, renamed back. So rows added to several inputs at once
land in one batch, as Spark's ``MultiAddData`` lands them, and the filter on the input, which reads no
event-time column, runs below every watermark.

After each ``AddData`` the replay calls ``processAllAvailable()``, which returns once the query has run the
data batch and the no-data batch Spark's rule asks for. ``StopStream``/``StartStream`` stop the query and
start it again on the same checkpoint; rows added while it is stopped go into one file, read by the first
batch of the next start. Checks read what ``foreachBatch`` received, batch by batch.
"""

from __future__ import annotations

import datetime
import os
import shutil
import tempfile

from ministream.spark.compiler.schema import ddl_schema
from ministream.spark.session import session_conf
from ministream.spark.source import write_script_files
from ministream.time.units import from_datetime, parse_timestamp
from tests.conformance.harness import (
    AddData,
    AdvanceManualClock,
    Assert,
    Case,
    CaseFailure,
    Check,
    CheckBatches,
    CheckWatermark,
    ClearSink,
    ExpectFailure,
    Inputs,
    NewStream,
    StartStream,
    StopStream,
    as_dict,
    as_tuple,
    compare,
    planned_steps,
)

INPUT = "__input"


class SparkReplay:
    """Replays a case's steps with Spark; :meth:`run` raises ``CaseFailure`` at the first step whose answer
    differs from the test's."""

    def __init__(self, case: Case, spark):
        if case.spark is not None:
            raise ValueError(f"case {case.id!r} has no Spark replay: {case.spark}")
        self.case = case
        self.spark = spark
        self.root = tempfile.mkdtemp(prefix="ministream-conformance-")
        self.single = len(case.inputs) == 1
        fields = [(INPUT, "STRING")] if not self.single else []
        for name, ddl in case.inputs.items():
            fields += [
                (column if self.single else f"{name}__{column}", kind) for column, kind in ddl_schema(ddl).items()
            ]
        self.schema_ddl = ", ".join(f"`{column}` {kind}" for column, kind in fields)
        self.schema = spark.createDataFrame([], self.schema_ddl).schema
        self.query_name = next(iter(case.queries))
        self.stream = 0
        self.checkpoint = "default"
        self.files = 0
        self.query = None
        self.conf_context = None
        self.pending: list[dict] = []
        self.failure: Exception | None = None
        self.memory = {"folder": self.root}  # Inputs.memory: Spark's workers see files, not the test's objects
        self._reset_sink()

    def _reset_sink(self) -> None:
        self.batches: dict[int, list[tuple]] = {}  # batch id -> rows, for the current checkpoint
        self.watermarks: dict[int, int | None] = {}
        self.read = -1  # the last batch id a check has seen
        self.cleared = -1  # batches up to this id were cleared from the sink

    # -- paths --------------------------------------------------------------------------------------------

    def _folder(self, kind: str) -> str:
        path = os.path.join(self.root, f"{kind}-{self.stream}-{self.checkpoint}".replace(" ", "_"))
        os.makedirs(path, exist_ok=True)
        return path

    # -- steps --------------------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            for number, step in enumerate(planned_steps(self.case)):
                if isinstance(step, NewStream):
                    self._stop()
                    self._new_stream(step)
                else:
                    self._step(number, step)
        finally:
            self._stop()
            shutil.rmtree(self.root, ignore_errors=True)

    def _step(self, number: int, step) -> None:
        if isinstance(step, StartStream):
            self._stop()
            self._start(step)
        elif isinstance(step, AddData):
            if not self.pending or self.case.files:
                self.pending.append([])
            for name, rows in step.rows.items():
                columns = self.case.columns(name)
                for row in rows:
                    values = as_dict(columns, row)
                    if self.single:
                        self.pending[-1].append(values)
                    else:
                        tagged = {f"{name}__{column}": value for column, value in values.items()}
                        self.pending[-1].append({INPUT: name, **tagged})
            if self.query is not None and self.query.isActive and self.processing_time:
                self._write_pending()
                self._process_all_available()
        elif isinstance(step, StopStream):
            self._stop()
        elif isinstance(step, ClearSink):
            self.cleared = self.read = max(self.batches, default=-1)
        elif isinstance(step, AdvanceManualClock):
            raise CaseFailure("Spark's manual clock (StreamManualClock) is a test-only class: no Spark replay")
        elif isinstance(step, ExpectFailure):
            if self.failure is None:
                raise CaseFailure(f"step {number}: expected a failure matching {step.spark!r}, the query ran")
            text = failure_text(self.failure)
            if step.spark is not None and step.spark not in text:
                raise CaseFailure(f"step {number}: expected a failure with {step.spark!r}, got: {text[:2000]}")
            self.failure = None
        elif isinstance(step, Check):
            self._raise_failure(number)
            self._check(number, step)
        elif isinstance(step, CheckBatches):
            self._raise_failure(number)
            got = len([batch_id for batch_id in self.batches if batch_id > self.cleared])
            if got != step.count:
                raise CaseFailure(f"step {number}: expected {step.count} batches, Spark's sink received {got}")
        elif isinstance(step, CheckWatermark):
            self._raise_failure(number)
            last = max(self.batches, default=None)
            watermark = None if last is None else self.watermarks.get(last)
            if watermark != step.ms:
                raise CaseFailure(
                    f"step {number}: expected watermark {step.ms}, Spark's last batch ran with {watermark}"
                )
        elif isinstance(step, Assert) and step.spark is not None:
            try:
                step.spark(self._inputs())
            except AssertionError as error:
                raise CaseFailure(f"step {number} ({step.what}): {error}") from error

    def _raise_failure(self, number: int) -> None:
        if self.failure is not None:
            raise CaseFailure(f"step {number}: Spark's query failed: {str(self.failure)[:3000]}") from self.failure

    # -- the query ----------------------------------------------------------------------------------------

    def _inputs(self) -> dict:
        from pyspark.sql import functions as F

        files = self.spark.readStream.schema(self.schema).option("maxFilesPerTrigger", 1).parquet(self._folder("data"))
        if self.single:
            return Inputs({next(iter(self.case.inputs)): files}, self.memory)
        streams = {
            name: files.where(F.col(INPUT) == name).select(
                *[F.col(f"`{name}__{column}`").alias(column) for column in self.case.columns(name)]
            )
            for name in self.case.inputs
        }
        return Inputs(streams, self.memory)

    def _start(self, step: StartStream) -> None:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException

        if step.manual_clock:
            raise CaseFailure("Spark's manual clock (StreamManualClock) is a test-only class: no Spark replay")
        if step.query is not None:
            self.query_name = step.query
        if step.checkpoint is not None:
            self.checkpoint = step.checkpoint
        query = self.case.queries[self.query_name]
        if query.twin is None:
            raise CaseFailure(f"query {self.query_name!r} of the case has no PySpark twin")
        self.processing_time = step.trigger.kind == "processing_time"
        self._write_pending()
        conf = {**query.conf, **step.conf}
        self.conf_context = session_conf(self.spark, conf)
        try:
            self.conf_context.__enter__()
            df = query.twin(self._inputs())
            writer = (
                df.writeStream.foreachBatch(self._sink)
                .outputMode(query.output_mode)
                .option("checkpointLocation", self._folder("checkpoint"))
            )
            if step.trigger.kind == "once":
                writer = writer.trigger(once=True)
            elif step.trigger.kind == "available_now":
                writer = writer.trigger(availableNow=True)
            self.query = writer.start()
            if not self.processing_time:
                self.query.awaitTermination()
                self._record_progress()
            else:
                self._process_all_available()
        except (PySparkException, Py4JJavaError) as error:
            self.failure = error
            self._stop()

    def _sink(self, batch_df, batch_id: int) -> None:
        columns = self.case.queries[self.query_name].output or self.case.output
        rows = [as_tuple(columns, row) for row in batch_df.toArrow().to_pylist()]
        self.batches[batch_id] = rows

    def _process_all_available(self) -> None:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException

        try:
            self.query.processAllAvailable()
        except (PySparkException, Py4JJavaError) as error:
            self.failure = error
            self._stop()
            return
        self._record_progress()

    def _record_progress(self) -> None:
        for progress in self.query.recentProgress:  # an idle query reports progress without event time too
            text = (progress["eventTime"] or {}).get("watermark")
            if text is not None:
                self.watermarks[progress["batchId"]] = parse_timestamp(text)

    def _write_pending(self) -> None:
        """Each pending batch of rows becomes one file of the data folder (modification times in order)."""
        for rows in self.pending:
            staging = self._folder("staging")
            for name in os.listdir(staging):
                os.remove(os.path.join(staging, name))
            write_script_files(self.schema, [rows], staging)
            self.files += 1
            written = os.path.join(staging, os.listdir(staging)[0])
            # The modification time is set before the file lands: a running query lists the folder every few
            # milliseconds, and a file seen with today's time would make every later (1970) file older than
            # the file source's maxFileAge, so that it never reads them.
            os.utime(written, (1_000_000 + self.files, 1_000_000 + self.files))
            os.rename(written, os.path.join(self._folder("data"), f"part-{self.files:06d}.parquet"))
        self.pending = []

    def _stop(self) -> None:
        if self.query is not None:
            try:
                self.query.stop()
            finally:
                self.query = None
        if self.conf_context is not None:
            context, self.conf_context = self.conf_context, None
            context.__exit__(None, None, None)

    def _new_stream(self, step: NewStream) -> None:
        old_data = self._folder("data")
        self.stream += 1
        self.checkpoint = f"stream {self.stream}"
        if step.query is not None:
            self.query_name = step.query
        if step.keep_data:  # the new query's folder starts with the old files (in one file: MemoryStreams)
            import pyarrow.parquet as pq

            written = [
                [
                    {k: from_datetime(v) if isinstance(v, datetime.datetime) else v for k, v in row.items()}
                    for row in rows
                ]
                for rows in (
                    pq.read_table(os.path.join(old_data, name)).to_pylist() for name in sorted(os.listdir(old_data))
                )
            ]
            kept = written + self.pending
            self.pending = kept if self.case.files else [[row for rows in kept for row in rows]] if kept else []
        else:
            self.pending = []
        self._reset_sink()

    # -- checks -------------------------------------------------------------------------------------------

    def _check(self, number: int, step: Check) -> None:
        visible = sorted(batch_id for batch_id in self.batches if batch_id > self.cleared)
        mode = self.case.queries[self.query_name].output_mode
        if step.kind == "new":
            got = [row for batch_id in visible if batch_id > self.read for row in self.batches[batch_id]]
        elif step.kind == "last" or mode == "complete":
            got = list(self.batches[visible[-1]]) if visible else []
        else:
            got = [row for batch_id in visible for row in self.batches[batch_id]]
        self.read = max(visible, default=self.read)
        problem = compare(step, got)
        if problem is not None:
            raise CaseFailure(f"step {number} ({step.kind} answer, Spark): {problem}")


def failure_text(error: Exception) -> str:
    """An error's text and the text of every cause below it (Spark wraps a query's failure in layers: the
    class of the innermost one is what the tests name)."""
    texts = [str(error)]
    java = getattr(error, "_origin", None) or getattr(error, "java_exception", None)
    while java is not None:
        texts.append(str(java.toString()))
        java = java.getCause()
    return "\n".join(texts)


def run_spark(case: Case, spark) -> None:
    """Replay ``case`` through its PySpark twin; raise ``CaseFailure`` if an answer differs from the test's."""
    SparkReplay(case, spark).run()
