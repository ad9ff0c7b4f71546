"""Sinks: exactly-once output is visible only when its checkpoint completes; at-least-once output shows
replayed rows twice."""

import contextlib

from ministream.checkpoints.exactly_once import AtLeastOnceSink, ExactlyOnceSink, SinkCrash
from ministream.checkpoints.recovery import run_with_recovery
from ministream.lessons import get_lesson


def test_rows_become_visible_when_their_checkpoint_completes():
    """An exactly-once sink keeps written rows in a transaction; pre-commit keeps them hidden, commit shows them."""
    sink = ExactlyOnceSink()
    sink.write(0, None, [{"n": 1}])
    assert sink.inner.rows == []
    sink.pre_commit(1)
    sink.write(0, None, [{"n": 2}])
    assert sink.inner.rows == []
    sink.commit(1)
    assert sink.inner.rows == [{"n": 1}]


def test_recovery_aborts_the_transactions_after_the_restored_checkpoint():
    """Recovering from checkpoint 1 commits what 1 covers and aborts checkpoint 2's and the open transaction."""
    sink = ExactlyOnceSink()
    for checkpoint_id in (1, 2):
        sink.write(0, None, [{"n": checkpoint_id}])
        sink.pre_commit(checkpoint_id)
    sink.write(0, None, [{"n": 3}])
    sink.recover(1)
    assert sink.inner.rows == [{"n": 1}]
    assert sink.prepared == {} and sink.open == []


def test_at_least_once_sink_shows_the_rows_written_before_a_crash_twice():
    """A micro-batch sink that crashes after 1 row of batch 3: appending shows it twice, transactional once."""
    lesson = get_lesson("tumbling-window")
    sizes = {}
    for delivery in ("at_least_once", "exactly_once"):
        flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
        run = run_with_recovery(flow, delivery=delivery, sink_crash=SinkCrash(batch_id=3, after_rows=1))
        sizes[delivery] = [len(batch.rows) for batch in run.output()]
    assert sizes == {"at_least_once": [0, 0, 0, 4, 1], "exactly_once": [0, 0, 0, 3, 1]}


def test_a_sink_crash_fires_once():
    """After its crash, a sink writes the same batch normally (the recovering run goes past it)."""
    sink = AtLeastOnceSink(crash=SinkCrash(batch_id=0, after_rows=0))
    with contextlib.suppress(RuntimeError):
        sink.write(0, None, [{"n": 1}])
    sink.write(0, None, [{"n": 1}])
    assert sink.inner.rows == [{"n": 1}]
