"""The public face (``ministream/__init__.py``): everything a user's pipeline needs is importable from
``ministream``, and each of those names shows itself at work in a ``>>>`` example (run by
tests/tools/test_doctests.py in the module that defines it)."""

import inspect

import ministream

PIPELINE_NEEDS = {
    # the plan
    "Dataflow",
    "Stream",
    "KeyedStream",
    # aggregates, windows, join ranges
    "Count",
    "Sum",
    "Min",
    "Max",
    "Avg",
    "Custom",
    "Tumbling",
    "Sliding",
    "Session",
    "TimeRange",
    # process functions: the class, the handle its init gets, the times and timers its handlers get
    "Processor",
    "ProcessorHandle",
    "TimerValues",
    "ExpiredTimerInfo",
    # the two execution models and processing time
    "run_microbatch",
    "run_continuous",
    "ManualClock",
    "ClockStep",
    # checkpoints and recovery
    "run_with_recovery",
    "MicroBatchCheckpoints",
    "MemoryStorage",
    "DirectoryStorage",
    "ExactlyOnceSink",
    "AtLeastOnceSink",
    # injected faults
    "Crash",
    "SimulatedCrash",
    "crash_at",
    # scripts in and results out, events files, the error of a refused pipeline
    "ScriptedSource",
    "CollectingSink",
    "read_events",
    "Field",
    "PipelineError",
}


def test_a_pipeline_needs_nothing_but_ministream():
    """Every name a user's pipeline needs is in ``ministream.__all__`` and importable from ``ministream``."""
    assert PIPELINE_NEEDS - set(ministream.__all__) == set()
    assert all(hasattr(ministream, name) for name in ministream.__all__)


def test_all_lists_exactly_the_public_names():
    """``__all__`` is sorted and names every public class and function the package imports, and nothing else."""
    public = {
        name
        for name, value in vars(ministream).items()
        if not name.startswith("_") and not inspect.ismodule(value)  # the layers are attributes once imported
    }
    assert ministream.__all__ == sorted(ministream.__all__)
    assert set(ministream.__all__) == public


def test_every_public_name_has_an_example():
    """Every name in ``ministream.__all__`` has a docstring with a ``>>>`` example."""
    assert [name for name in ministream.__all__ if ">>>" not in (getattr(ministream, name).__doc__ or "")] == []
