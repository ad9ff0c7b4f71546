"""Checkpoints: a consistent picture of a running dataflow, taken while it runs, from which it can restart.

A checkpoint must hold every step's state and every source's position *as of one cut through the stream*:
each row is either before the cut (its effect is in the state, the source will not read it again) or after
it (not in the state, read again after a restart). Nothing may be both, nothing neither. ministream takes
that cut the way Flink does, after Chandy and Lamport: with **barriers**.

1. The coordinator triggers checkpoint n: every source notes its offset and sends ``Barrier(n)`` on each of
   its channels, in line with its rows (continuous model: every ``interval`` rows read; micro-batch model:
   at the end of each batch, where ``EndOfBatch`` is the barrier and the checkpoint id is the batch id).
2. **Aligned** (the default): a subtask with several inputs *holds back* each input that delivered barrier n
   until all have (``runtime.Subtask.align``); then everything before the cut, and nothing after, has
   reached it: it snapshots its state, acknowledges to the coordinator and forwards the barrier.
3. A sink's snapshot *pre-commits* what it wrote since the last barrier (``exactly_once.ExactlyOnceSink``).
4. The checkpoint is **complete** when every subtask has acknowledged it (the sinks are last, since a barrier
   reaches them after everything upstream). The coordinator stores it (``checkpoint_storage``) and tells the
   sinks to commit.

Two other modes, for contrast (Flink has both):

- **unaligned** (:class:`UnalignedBarriers`): nothing is held back; the first barrier n to arrive *overtakes*
  the records waiting in the subtask's channels, and those records, which are before the cut but not yet in
  any state, are stored with the checkpoint as *in-flight data* and put back in their channels on restore;
- **at least once** (:class:`AtLeastOnceBarriers`): nothing is held back and nothing is stored in flight; the
  subtask snapshots when barrier n has arrived on every input. Rows that came *after* the barrier on a fast
  input are then in the state, and will be read again after a restart: they count twice.

ministream lets the barriers of several checkpoints travel at once, one behind the other (Flink does when
``maxConcurrentCheckpoints`` is above its default of 1), except unaligned ones: one at a time, as Flink
requires. Unlike Flink, which derives watermarks afresh after a restart, ministream also stores each subtask's
watermark and its input channels' (``watermarks.WatermarkValve``), so a recovered run repeats the failure-free
one exactly.

>>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource
>>> from ministream.checkpoints.storage import MemoryStorage
>>> from ministream.checkpoints.recovery import run_with_recovery
>>> flow = Dataflow("counts")
>>> events = flow.source("events", ScriptedSource([[{"key": "a"}, {"key": "b"}, {"key": "a"}],
...                                                [{"key": "a"}, {"key": "c"}], [{"key": "b"}, {"key": "b"}]]))
>>> events.key_by("key").aggregate("totals", count=Count()).sink("output", CollectingSink())
>>> storage = MemoryStorage()
>>> run = run_with_recovery(flow, model="continuous", interval=2, storage=storage)
>>> storage.checkpoint_ids()   # after rows 2, 4 and 6 of 7, and a last one at the end of the input
[1, 2, 3, 4]
>>> load_latest(storage).sources["events"]["offset"]
7
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ministream.checkpoints.incremental import DELTA_PARTS, resolve, snapshot_operator
from ministream.checkpoints.restore import install_sinks, restore_graph
from ministream.checkpoints.serialization import decode_json, encode_json
from ministream.checkpoints.storage import CheckpointStorage
from ministream.core.physical import PhysicalGraph, Subtask
from ministream.state.changes import StateDelta


@attrs.define
class Checkpoint:
    """Everything a run needs to go on from a cut: source offsets, every subtask's snapshot, in-flight data.

    >>> checkpoint = Checkpoint(3, "microbatch", "aligned", 1, sources={"events": {"offset": 4}},
    ...                         operators={"totals": {0: {"keyed": {38: {"aggregate": {"alice": [2, 5.0]}}}}}})
    >>> sorted(checkpoint.files())
    ['checkpoint.json', 'state/totals/0.json']
    >>> Checkpoint.from_files(checkpoint.files()) == checkpoint
    True
    >>> delta = StateDelta(["aggregate"], {38: {"aggregate": {"alice": [3, 6.0]}}})
    >>> sorted(Checkpoint(4, "microbatch", "aligned", 1, base=3, operators={"totals": {0: {"keyed": delta}}}).files())
    ['checkpoint.json', 'state/totals/0.delta.json']

    Attributes:
        checkpoint_id: n (the batch id in the micro-batch model).
        model: ``"microbatch"`` or ``"continuous"``.
        mode: ``"aligned"``, ``"unaligned"`` or ``"at_least_once"`` (micro-batch: ``"aligned"``).
        parallelism: the parallelism of the keyed steps when it was taken.
        sources: ``{source step: {"offset": next position to read, ...}}``.
        operators: ``{step: {subtask index: the operator's snapshot()}}``.
        subtasks: ``{"step[i]": {"watermark": ..., "valve": ...}}``, the runtime's own state (continuous).
        channels: ``{"receiver[i]#input position": [messages]}``, the in-flight data (unaligned only).
        progress: where the run was: micro-batch ``{"next_batch", "watermark", "late_watermark",
            "watermarks"}``; continuous ``{"clock", "rows_read"}``.
        base: for an incremental checkpoint, the checkpoint it is built on: the keyed state in ``operators``
            is then an ``changes.StateDelta`` per subtask (``None``: a full checkpoint).
    """

    checkpoint_id: int
    model: str
    mode: str
    parallelism: int
    sources: dict = attrs.field(factory=dict)
    operators: dict = attrs.field(factory=dict)
    subtasks: dict = attrs.field(factory=dict)
    channels: dict = attrs.field(factory=dict)
    progress: dict = attrs.field(factory=dict)
    base: int | None = None

    def files(self) -> dict[str, bytes]:
        """The checkpoint as named parts, which the storage keeps with a manifest (``storage.DirectoryStorage``:
        in one file): ``checkpoint.json``, one ``state/<step>/<subtask>.json`` per operator snapshot
        (``<subtask>.delta.json`` when its keyed state is a delta), and ``channels.json`` for in-flight data
        (like Spark's ``state/<operator>/<partition>/<version>.snapshot`` and ``.delta``)."""
        header = {
            "checkpoint_id": self.checkpoint_id,
            "model": self.model,
            "mode": self.mode,
            "parallelism": self.parallelism,
            "base": self.base,
            "sources": self.sources,
            "progress": self.progress,
            "subtasks": self.subtasks,
        }
        files = {"checkpoint.json": encode_json(header)}
        for step, snapshots in self.operators.items():
            for index, snapshot in snapshots.items():
                kind = ".delta" if any(isinstance(snapshot.get(part), StateDelta) for part in DELTA_PARTS) else ""
                files[f"state/{step}/{index}{kind}.json"] = encode_json(snapshot)
        if self.channels:
            files["channels.json"] = encode_json(self.channels)
        return files

    @classmethod
    def from_files(cls, files: dict[str, bytes]) -> Checkpoint:
        """The checkpoint that :meth:`files` wrote."""
        checkpoint = cls(**decode_json(files["checkpoint.json"]))
        for path, data in sorted(files.items()):
            if path.startswith("state/"):
                _, step, name = path.rsplit("/", 2)
                index = int(name.removesuffix(".json").removesuffix(".delta"))
                checkpoint.operators.setdefault(step, {})[index] = decode_json(data)
        if "channels.json" in files:
            checkpoint.channels = decode_json(files["channels.json"])
        return checkpoint


def load_latest(storage: CheckpointStorage) -> Checkpoint | None:
    """The newest complete checkpoint in ``storage`` (torn and corrupt ones skipped, see
    ``storage.problems``), or ``None``. An incremental one comes resolved: its deltas applied to the full
    checkpoint they are built on (``incremental.resolve``).

    >>> from ministream.checkpoints.storage import MemoryStorage
    >>> storage = MemoryStorage(); load_latest(storage) is None
    True
    >>> storage.save_files(3, Checkpoint(3, "microbatch", "aligned", 1).files()); load_latest(storage).checkpoint_id
    3"""
    chain = storage.latest_chain()
    return None if chain is None else resolve([Checkpoint.from_files(files) for _, files in chain])


def load_checkpoint(storage: CheckpointStorage, checkpoint_id: int) -> Checkpoint:
    """One stored checkpoint, resolved like :func:`load_latest`'s; ``ValueError`` when it is torn or corrupt,
    or built on one that is."""
    return resolve([Checkpoint.from_files(files) for _, files in storage.chain(checkpoint_id)])


def snapshot_subtask(subtask: Subtask, delta: bool = False) -> dict:
    """One subtask's part of a checkpoint: its operator's snapshot (its keyed state as a delta when ``delta``,
    see ``incremental.snapshot_operator``), its watermark and its valve's state.

    The valve's state is ``{"watermark", "idle", "channels": {position: {"watermark", "active", "aligned"}}}``
    (``watermarks.WatermarkValve``); ``inputs`` gives the input number of each channel position (a restore at
    another parallelism matches channels by input).

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Sum
    >>> from ministream.operators.planner import physical_graph
    >>> flow = Dataflow("totals")
    >>> events = flow.source("events", ScriptedSource([]))   # no script: a row is sent by hand below
    >>> events.key_by("key").aggregate("totals", count=Count(), sum=Sum("value")).sink("output", CollectingSink())
    >>> graph = physical_graph(flow, parallelism=1, output_mode="update")
    >>> graph.by_step["events"][0].output.send([{"key": "a", "value": 2.0}])
    >>> graph.by_step["totals"][0].run_one(0)
    >>> snapshot_subtask(graph.by_step["totals"][0])
    {'operator': {'keyed': {122: {'aggregate': {'a': [1, 2.0]}}}}, 'watermark': None, 'inputs': [0], 'valve': None}
    """
    valve = subtask.valve
    return {
        "operator": snapshot_operator(subtask.operator, delta),
        "watermark": subtask.watermark,
        "inputs": [number for number, _ in subtask.inputs],
        "valve": None
        if valve is None
        else {
            "watermark": valve.watermark,
            "idle": valve.idle,
            "channels": {p: dict(c) for p, c in valve.channels.items()},
        },
    }


class CheckpointCoordinator:
    """Triggers checkpoints, collects each subtask's acknowledgement with its snapshot, and completes a
    checkpoint when every subtask has acknowledged it: stores it, then tells the sinks to commit.

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource
    >>> from ministream.checkpoints.storage import MemoryStorage
    >>> from ministream.operators.planner import physical_graph
    >>> flow = Dataflow("counts")
    >>> events = flow.source("events", ScriptedSource([]))   # nothing runs: the subtasks acknowledge by hand
    >>> events.key_by("key").aggregate("totals", count=Count()).sink("output", CollectingSink())
    >>> graph = physical_graph(flow, parallelism=1, output_mode="update")
    >>> coordinator = CheckpointCoordinator(graph, MemoryStorage(), {}, "continuous")
    >>> n = coordinator.trigger({"events": {"offset": 0}}, {})
    >>> coordinator.acknowledge(n, graph.by_step["totals"][0], snapshot_subtask(graph.by_step["totals"][0]))
    >>> coordinator.in_progress(), coordinator.completed       # the sink has not acknowledged yet
    (True, [])
    >>> coordinator.acknowledge(n, graph.by_step["output"][0], snapshot_subtask(graph.by_step["output"][0]))
    >>> coordinator.in_progress(), coordinator.completed
    (False, [1])

    State: ``self.pending = {checkpoint_id: {"sources", "progress", "base", "acks": {subtask: snapshot}}}``,
    the checkpoints in flight; ``self.completed`` (ids, in order) and ``self.next_id``; for incremental
    checkpoints, ``self.previous`` (the last one triggered: the next delta's base) and ``self.deltas`` (how
    many deltas since the last full one).

    Args:
        graph: the running physical graph (which subtasks must acknowledge).
        storage: where complete checkpoints go.
        sinks: ``{sink step: sinks.AtLeastOnceSink or ExactlyOnceSink}``, told to commit on completion.
        model, mode: recorded in every checkpoint.
        next_id: the id of the next checkpoint (after a restore: the restored one's + 1).
        on_complete: called with each completed ``Checkpoint`` (the drivers trace it).
        incremental: ``None``: every checkpoint is full; ``k``: up to ``k`` incremental checkpoints (deltas)
            after each full one (``state/changes.py``; Spark's ``stateStore.minDeltasForSnapshot``). The first
            checkpoint of a run, restored or not, is full: the subtasks' changes are counted from it.
    """

    def __init__(
        self,
        graph: PhysicalGraph,
        storage: CheckpointStorage,
        sinks: dict,
        model: str,
        mode: str = "aligned",
        next_id: int = 1,
        on_complete=None,
        incremental: int | None = None,
    ):
        self.graph = graph
        self.storage = storage
        self.sinks = sinks
        self.model = model
        self.mode = mode
        self.next_id = next_id
        self.on_complete = on_complete
        self.expected = {str(subtask) for subtask in graph.subtasks if subtask.operator is not None}
        self.pending: dict[int, dict] = {}
        self.completed: list[int] = []
        self.incremental = incremental
        self.previous: int | None = None
        self.deltas = 0

    def in_progress(self) -> bool:
        """Whether a checkpoint was triggered and has not completed yet."""
        return bool(self.pending)

    def trigger(self, sources: dict, progress: dict, checkpoint_id: int | None = None) -> int:
        """Start checkpoint n with the sources' offsets; returns n (the caller sends the barriers)."""
        n = self.next_id if checkpoint_id is None else checkpoint_id
        self.next_id = n + 1
        base = None  # full, unless incremental and a full one came less than `incremental` deltas ago
        if self.incremental and self.previous is not None and self.deltas < self.incremental:
            base = self.previous
        self.deltas = 0 if base is None else self.deltas + 1
        self.previous = n
        self.pending[n] = {"sources": sources, "progress": progress, "base": base, "acks": {}}
        return n

    def is_delta(self, checkpoint_id: int) -> bool:
        """Whether checkpoint n is incremental: each subtask then snapshots only what changed since its
        previous snapshot, which belongs to checkpoint n - 1 (barriers reach a subtask in order)."""
        return self.pending[checkpoint_id]["base"] is not None

    def acknowledge(self, checkpoint_id: int, subtask: Subtask, snapshot: dict) -> None:
        """A subtask took its snapshot for checkpoint n; the last acknowledgement completes it."""
        pending = self.pending[checkpoint_id]
        pending["acks"][str(subtask)] = (subtask, snapshot)
        if set(pending["acks"]) == self.expected:
            self._complete(checkpoint_id, self.pending.pop(checkpoint_id))

    def _complete(self, n: int, pending: dict) -> None:
        checkpoint = Checkpoint(
            n,
            self.model,
            self.mode,
            self.graph.parallelism,
            pending["sources"],
            progress=pending["progress"],
            base=pending["base"],
        )
        for name, (subtask, snapshot) in sorted(pending["acks"].items()):
            checkpoint.operators.setdefault(subtask.step.name, {})[subtask.index] = snapshot["operator"]
            if self.model == "continuous":
                checkpoint.subtasks[name] = {part: snapshot[part] for part in ("watermark", "valve", "inputs")}
        for _, (_, snapshot) in sorted(pending["acks"].items()):  # in-flight data, in channel order:
            for channel, messages in snapshot.get("in_flight_inputs", {}).items():  # what the receiver took
                checkpoint.channels.setdefault(channel, []).extend(messages)  # after its snapshot,
        for _, (_, snapshot) in sorted(pending["acks"].items()):
            for channel, messages in snapshot.get("in_flight_outputs", {}).items():  # then what the barrier
                checkpoint.channels.setdefault(channel, []).extend(messages)  # overtook at the sender
        self.storage.save_files(n, checkpoint.files(), base=checkpoint.base)
        self.completed.append(n)
        for sink in self.sinks.values():
            sink.commit(n)
        if self.on_complete is not None:
            self.on_complete(checkpoint)


class MicroBatchCheckpoints:
    """Spark's checkpoint location, for ``run_microbatch(flow, checkpoints=...)``.

    Spark's protocol, step by step:

    1. before batch k reads anything, its id, watermarks and end offsets go to the *offsets log*
       (``offsets/k``): the batch is now planned, and will be run exactly so, even after a crash;
    2. the batch runs; at its end every subtask's state is snapshotted: that is checkpoint k (Spark's state
       store version k+1) and completing it is the *commit* (``commits/k``); then the sinks commit;
    3. after a crash: restore the last complete checkpoint c; if ``offsets/c+1`` exists, batch c+1 started
       and did not commit: run it again with the same id, watermarks and offsets; otherwise go on at c+1.

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource, run_microbatch
    >>> from ministream.checkpoints.storage import MemoryStorage
    >>> flow = Dataflow("counts")
    >>> events = flow.source("events", ScriptedSource([[{"key": "a"}, {"key": "b"}], [{"key": "a"}], [{"key": "c"}]]))
    >>> events.key_by("key").aggregate("totals", count=Count()).sink("output", CollectingSink())
    >>> storage = MemoryStorage()
    >>> run = run_microbatch(flow, output_mode="update", checkpoints=MicroBatchCheckpoints(storage))
    >>> storage.checkpoint_ids(), storage.offsets(2)
    ([0, 1, 2], {'batch_id': 2, 'watermark': None, 'late_watermark': None, 'offsets': {'events': 3}})

    Args:
        storage: where checkpoints and the offsets log go.
        sinks: ``{sink step: sinks.ExactlyOnceSink or AtLeastOnceSink}`` put in front of the flow's sinks.
        incremental: up to this many delta checkpoints after each full one (``CheckpointCoordinator``).
        on_restore: called once the restore is done, with the checkpoint restored (``None``: none was) and
            where the run goes on (``(batch id, watermark, late watermark)``, ``None``: from the start); the
            recovering run uses it to record the restore in its trace.
    """

    def __init__(
        self,
        storage: CheckpointStorage,
        sinks: dict | None = None,
        incremental: int | None = None,
        on_restore: Callable[[Checkpoint | None, tuple | None], None] | None = None,
    ):
        self.storage = storage
        self.sinks = sinks or {}
        self.incremental = incremental
        self.on_restore = on_restore
        self.coordinator = None
        self.restored: Checkpoint | None = None

    def restore(self, graph: PhysicalGraph, watermarks) -> tuple[int, int, int | None, int | None] | None:
        """Before the first batch: restore the last complete checkpoint into ``graph`` and return where to go
        on, ``(batch id, script position, watermark, late watermark)``; ``None`` to start from the beginning.

        The watermarks come back as Spark brings them back: the global watermark the next batch runs with (the
        commit log's ``nextBatchWatermarkMs``) and the multiple-watermark policy recorded when the query first
        ran, which wins over the new run's; *not* each input's own watermark (Spark keeps those in memory
        only): every input starts over, and until an input's own watermark passes the restored global one,
        the global one stays where it was (it never goes down)."""
        resume = self._restore(graph, watermarks)
        if self.on_restore is not None:
            self.on_restore(self.restored, resume)
        return resume

    def _restore(self, graph: PhysicalGraph, watermarks) -> tuple[int, int, int | None, int | None] | None:
        install_sinks(graph, self.sinks)
        self.coordinator = CheckpointCoordinator(
            graph, self.storage, self.sinks, "microbatch", incremental=self.incremental
        )
        self.restored = checkpoint = load_latest(self.storage)
        for sink in self.sinks.values():
            sink.recover(None if checkpoint is None else checkpoint.checkpoint_id)
        if checkpoint is None:
            return None
        restore_graph(graph, checkpoint)
        progress = checkpoint.progress
        saved = progress["watermarks"]
        if watermarks is not None and saved is not None:
            watermarks.proposals = {}
            watermarks.current = saved["current"]
            watermarks.policy = saved.get("policy", watermarks.policy)
        batch_id = progress["next_batch"]
        position = progress.get("next_position", batch_id)
        logged = self.storage.offsets(batch_id)  # the batch that crashed, if it had started: as logged
        if logged is not None:
            return batch_id, position, logged["watermark"], logged["late_watermark"]
        return batch_id, position, progress["watermark"], progress["late_watermark"]

    def logged(self, batch_id: int) -> dict | None:
        """The offsets log entry of batch k when it started before a crash and never committed (``None``
        otherwise): it runs again with the same watermarks, offsets and timestamp, even if it is a no-data
        batch that the restored state alone would not ask for (Spark reruns every logged batch)."""
        return self.storage.offsets(batch_id)

    def planned(self, batch_id: int) -> bool:
        """Whether batch k is in the offsets log (it started before a crash: it runs again)."""
        return self.logged(batch_id) is not None

    def begin_batch(self, batch) -> None:
        """Step 1: the offsets log entry of batch k (a rerun must find the same one there): its watermarks,
        the script position each source has read up to when it ends, and its timestamp when it has one."""
        end = batch.batch_id + 1 if batch.end is None else batch.end
        entry = {
            "batch_id": batch.batch_id,
            "watermark": batch.watermark,
            "late_watermark": batch.late_watermark,
            "offsets": {step.name: end for step in self.coordinator.graph.flow.sources},
        }
        if batch.processing_time is not None:
            entry["processing_time"] = batch.processing_time
        logged = self.storage.offsets(batch.batch_id)
        if logged is not None and logged != entry:
            raise RuntimeError(f"batch {batch.batch_id} is run again with {entry} but its offsets log says {logged}")
        self.storage.log_offsets(batch.batch_id, entry)

    def commit_batch(self, batch, graph: PhysicalGraph, watermarks, watermark, late_watermark) -> None:
        """Step 2: batch k ended: snapshot every subtask as checkpoint k; the sinks pre-commit, then commit."""
        k = batch.batch_id
        end = k + 1 if batch.end is None else batch.end
        progress = {
            "next_batch": k + 1,
            "next_position": end,
            "watermark": watermark,
            "late_watermark": late_watermark,
            "watermarks": None
            if watermarks is None
            else {"proposals": dict(watermarks.proposals), "current": watermarks.current, "policy": watermarks.policy},
        }
        sources = {step.name: {"offset": end} for step in graph.flow.sources}
        self.coordinator.trigger(sources, progress, checkpoint_id=k)
        delta = self.coordinator.is_delta(k)
        for subtask in graph.subtasks:
            if subtask.operator is not None:
                if subtask.step.name in self.sinks:
                    self.sinks[subtask.step.name].pre_commit(k)
                # written below, in this call, before any row changes the state: the snapshot shares its values
                snapshot = snapshot_operator(subtask.operator, delta, sharing=True)
                self.coordinator.acknowledge(k, subtask, {"operator": snapshot})
