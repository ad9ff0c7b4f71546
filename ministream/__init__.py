"""ministream: learn stateful stream processing from a small engine checked against Spark.

The public names a pipeline needs, in one place:

>>> from ministream import Dataflow, Count, ScriptedSource, CollectingSink, run_microbatch
>>> flow = Dataflow("clicks")
>>> flow.source("clicks", ScriptedSource([[{"key": "a"}, {"key": "a"}]])).key_by("key").aggregate(
...     "count", clicks=Count()).sink("output", CollectingSink())
>>> run_microbatch(flow, output_mode="complete").output()[0].rows
[{'key': 'a', 'clicks': 2}]
"""

from ministream.core.aggregates import Avg, Count, Custom, Max, Min, Sum
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.core.steps import RowCondition
from ministream.core.triggers import Trigger
from ministream.errors import PipelineError
from ministream.models.microbatch import run_microbatch
from ministream.time.windows import Sliding, Tumbling

__all__ = [
    "Avg",
    "CollectingSink",
    "Count",
    "Custom",
    "Dataflow",
    "Max",
    "Min",
    "PipelineError",
    "RowCondition",
    "ScriptedSource",
    "Sliding",
    "Sum",
    "Trigger",
    "Tumbling",
    "run_microbatch",
]
