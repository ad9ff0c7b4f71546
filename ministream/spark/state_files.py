"""Spark's state files: the deltas and snapshots a stateful query keeps in its checkpoint location.

Spark's default state store (``HDFSBackedStateStoreProvider``) keeps the state of each stateful operator and
shuffle partition as numbered versions, in ``state/<operator>/<partition>/``:

- ``<version>.delta``, written by every batch (batch k writes version k + 1): the keys the batch updated, and
  the keys it removed;
- ``<version>.snapshot``, written now and then by a background *maintenance* task (every
  ``spark.sql.streaming.stateStore.maintenanceInterval``, 60 s by default) once there are
  ``spark.sql.streaming.stateStore.minDeltasForSnapshot`` deltas (10 by default) since the last snapshot: the
  whole partition, so that loading version N reads one snapshot and the deltas after it.

:func:`state_files` runs one short query with both settings turned down, so that a few batches show both kinds
of file; ``python -m ministream.tools.docs --spark`` writes the listing into tutorial 15 (the
``<!-- spark state files -->`` block). ministream's incremental checkpoints (``state/changes.py``) follow the same
model, with the full checkpoint written by the checkpoint itself rather than in the background.
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path

from ministream.checkpoints.storage import folder_outline
from ministream.spark.session import session_conf, spark_session

BLOCK = re.compile(r"(<!-- spark state files -->\n```text\n)(.*?)(```\n<!-- /spark state files -->)", re.S)
SETTINGS = {
    "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2",
    "spark.sql.streaming.stateStore.maintenanceInterval": "200ms",
}
"""A snapshot after every 2 deltas, looked for 5 times a second (the defaults: 10 deltas, every 60 s)."""


def state_files(batches: int = 6, master: str | None = None) -> str:
    """Run a running count per key for ``batches`` micro-batches (one new JSON file each) with a checkpoint
    location, pausing after each batch so that the maintenance task can write snapshots, and outline the
    location's ``state/`` folder (``storage.folder_outline``).

    >>> print(state_files())                      # doctest: +SKIP
    0/0/{1..6}.delta
    ..."""
    spark = spark_session(master)
    with tempfile.TemporaryDirectory() as folder:
        incoming, location = Path(folder, "incoming"), Path(folder, "checkpoint")
        incoming.mkdir()
        counts = spark.readStream.schema("key STRING").json(str(incoming)).groupBy("key").count()
        with session_conf(spark, SETTINGS):
            query = (
                counts.writeStream.outputMode("update")
                .format("noop")
                .option("checkpointLocation", str(location))
                .start()
            )
        try:
            for batch in range(batches):
                written = Path(folder, f"{batch}.json")
                written.write_text("".join(f'{{"key": "k{(batch + i) % 5}"}}\n' for i in range(3)))
                written.rename(incoming / written.name)  # the file source must see whole files
                query.processAllAvailable()
                time.sleep(1)  # the maintenance task's turn
        finally:
            query.stop()
        return folder_outline(location / "state")


def refresh_page(path, text: str) -> bool:
    """Put ``text`` in the page's spark-state-files block; ``True`` when the page changed."""
    page = Path(path)
    old = page.read_text()
    new = BLOCK.sub(lambda match: match.group(1) + text + "\n" + match.group(3), old)
    page.write_text(new)
    return new != old
