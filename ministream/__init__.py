"""ministream: learn stateful stream processing from a small engine checked against Spark.

Everything a pipeline needs is importable from here: the dataflow and its streams, aggregates, windows, join
ranges, process functions with their state handle and timers, the two execution models and their clock,
checkpoints and recovery, injected crashes, scripted sources and collecting sinks, events files, and the error
a refused pipeline raises. Each name's docstring shows it at work.

>>> from ministream import Dataflow, Count, ScriptedSource, CollectingSink, run_microbatch
>>> flow = Dataflow("clicks")
>>> flow.source("clicks", ScriptedSource([[{"key": "a"}, {"key": "a"}]])).key_by("key").aggregate(
...     "count", clicks=Count()).sink("output", CollectingSink())
>>> run_microbatch(flow, output_mode="complete").output()[0].rows
[{'key': 'a', 'clicks': 2}]
"""

from ministream.checkpoints.coordinator import MicroBatchCheckpoints
from ministream.checkpoints.exactly_once import AtLeastOnceSink, ExactlyOnceSink
from ministream.checkpoints.recovery import run_with_recovery
from ministream.checkpoints.storage import DirectoryStorage, MemoryStorage
from ministream.core.aggregates import Avg, Count, Custom, Max, Min, Sum
from ministream.core.events import Field, read_events
from ministream.core.faults import Crash, SimulatedCrash, crash_at
from ministream.core.plan import Dataflow, KeyedStream, Stream
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.core.steps import RowCondition
from ministream.core.triggers import Trigger
from ministream.errors import PipelineError
from ministream.models.continuous import run_continuous
from ministream.models.microbatch import run_microbatch
from ministream.operators.process import ExpiredTimerInfo, Processor, TimerValues
from ministream.operators.processor_handle import ProcessorHandle
from ministream.time.clock import ClockStep, ManualClock
from ministream.time.ranges import TimeRange
from ministream.time.windows import Session, Sliding, Tumbling

__all__ = [
    "AtLeastOnceSink",
    "Avg",
    "ClockStep",
    "CollectingSink",
    "Count",
    "Crash",
    "Custom",
    "Dataflow",
    "DirectoryStorage",
    "ExactlyOnceSink",
    "ExpiredTimerInfo",
    "Field",
    "KeyedStream",
    "ManualClock",
    "Max",
    "MemoryStorage",
    "MicroBatchCheckpoints",
    "Min",
    "PipelineError",
    "Processor",
    "ProcessorHandle",
    "RowCondition",
    "ScriptedSource",
    "Session",
    "SimulatedCrash",
    "Sliding",
    "Stream",
    "Sum",
    "TimeRange",
    "TimerValues",
    "Trigger",
    "Tumbling",
    "crash_at",
    "read_events",
    "run_continuous",
    "run_microbatch",
    "run_with_recovery",
]
