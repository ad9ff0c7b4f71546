"""The plan (``core/plan.py``): a Dataflow refuses, as it is built, a pipeline it could not name or run."""

import pytest

from ministream.core.plan import Dataflow
from ministream.core.sources import ScriptedSource
from ministream.errors import PipelineError


def test_step_names_are_unique():
    """Two steps with one name are refused: traces and diagrams name steps."""
    flow = Dataflow("twice")
    events = flow.source("events", ScriptedSource([]))
    events.map("same", dict)
    with pytest.raises(PipelineError, match="already has a step named 'same'"):
        events.map("same", dict)
