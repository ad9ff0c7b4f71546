"""What a learner sees of Spark at the command line: no start-up banner, no log lines, and a planned crash in one
line instead of a Java stack; Spark's output itself is filtered line by line on its way to the screen."""

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ministream.spark.session import STARTING, _relay

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "ministream.tools.cli"]


def test_the_jvm_banner_and_the_worker_notes_are_held_back(monkeypatch):
    """The incubator-module banner and PySpark's transformWithState worker notes (with the blank line after each)
    do not reach stderr; every other line does, in order, an error's stack included."""
    jvm_stderr = io.BytesIO(
        b"WARNING: Using incubator modules: jdk.incubator.vector\n"
        b"Starting Streaming TransformWithStateInPandas Python worker.\n"
        b"\n"
        b"Streaming TransformWithStateInPandas Python worker Completed execution of UDF: <bound method ...>.\n"
        b"\n"
        b"26/11/24 03:54:32 ERROR Executor: Exception in task 0.0 in stage 0.0 (TID 0)\n"
        b"\n"
        b"\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:1097)\n"
    )
    shown = io.StringIO()
    monkeypatch.setattr(sys, "stderr", shown)
    _relay(jvm_stderr)
    assert shown.getvalue().splitlines() == [
        "26/11/24 03:54:32 ERROR Executor: Exception in task 0.0 in stage 0.0 (TID 0)",
        "",
        "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:1097)",
    ]


@pytest.mark.spark
def test_a_planned_crash_is_one_line_and_spark_starts_quietly():
    """`ministream compare checkpoint-recovery` says Spark is starting, reports the planned crash in one line, and
    shows no Spark log line, banner or Java stack; its table follows on stdout and every batch matches."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [*CLI, "compare", "checkpoint-recovery"],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        STARTING,
        "Spark's query stopped in batch 3 as planned: foreachBatch raised after 1 of 3 rows",
    ]
    seen = done.stdout + done.stderr
    for noise in (
        "ERROR MicroBatchExecution",
        "\tat org.apache",
        "Traceback",
        "incubator",
        "NativeCodeLoader",
        "log4j",
        "Setting default log level",
        "SimulatedSparkCrash",
    ):
        assert noise not in seen, noise
    assert done.stdout.splitlines()[-1] == "checkpoint-recovery: 5 of 5 batches match; 4 of 4 rows match"
