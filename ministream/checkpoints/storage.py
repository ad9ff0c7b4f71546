"""Checkpoint storage: where checkpoints are kept, and how a half-written or damaged one is recognized.

A checkpoint is stored as a small set of files (``checkpoints/coordinator.py`` says what is in them, ``checkpoints/serialization.py``
how state becomes bytes): one folder per checkpoint, ``chk-<id>/``, holding the files and a ``manifest.json``
that lists every file with its **sha256**. The rules that make a crash *while storing* harmless:

1. every file is written under a temporary name, then renamed into place (a rename is atomic: a reader sees
   the whole file or none of it);
2. the manifest is written last: a checkpoint without a manifest is **torn** (the run died while storing it);
3. a file whose sha256 differs from the manifest's, or that is missing, makes the checkpoint **corrupt**;
4. recovery takes the newest checkpoint that is neither, and reports each one it skipped, naming the file;
5. an *incremental* checkpoint (``state/changes.py``) holds only what changed since its **base**, the checkpoint
   before it: its manifest names the base and the base manifest's sha256. It is usable only when its base is,
   and is still the one it was built on (a batch run again stores its checkpoint again, under the same id).
   Deleting old checkpoints (``retain``) keeps every base a kept checkpoint is built on.

The micro-batch model also keeps Spark's *offsets log*: ``offsets/<batch id>`` is written before batch k reads
anything (its watermarks and source offsets), so a batch that crashed is run again exactly as it first ran.

:class:`MemoryStorage` (the default) keeps the same files in a dict, so the same checks run in every test;
:class:`DirectoryStorage` writes them to a folder a learner can open.

>>> storage = MemoryStorage()
>>> storage.save_files(1, {"checkpoint.json": encode_json({"offsets": {"events": 3}})})
>>> storage.save_files(2, {"checkpoint.json": b"{}"})
>>> storage.files[2]["checkpoint.json"] = b'{"damaged": true}'
>>> storage.latest_files()[0]
1
>>> print(storage.problems[0])
checkpoint 2 skipped: chk-2/checkpoint.json is corrupt (its sha256 differs from the manifest's)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import attrs

from ministream.checkpoints.serialization import decode_json, encode_json, from_plain, to_plain  # noqa: F401 (re-exported)

MANIFEST = "manifest.json"


def sha256(data: bytes) -> str:
    """The hex sha256 of some bytes: what the manifest records for each file.

    >>> sha256(b"{}")[:12]
    '44136fa355b3'"""
    return hashlib.sha256(data).hexdigest()


# -- storage ------------------------------------------------------------------------------------------------


@attrs.frozen
class CheckpointProblem:
    """A checkpoint that recovery skipped, and why, naming the file.

    >>> print(CheckpointProblem(4, "chk-4/checkpoint.json", "is missing: the checkpoint is torn"))
    checkpoint 4 skipped: chk-4/checkpoint.json is missing: the checkpoint is torn"""

    checkpoint_id: int
    path: str
    reason: str

    def __str__(self):
        return f"checkpoint {self.checkpoint_id} skipped: {self.path} {self.reason}"


class CheckpointStorage:
    """What every storage does: store a checkpoint's files with a manifest, find the newest complete one,
    and keep the micro-batch offsets log. Subclasses say where bytes go (``_put``, ``_get``, ``_ids``...).

    State: ``self.problems``, every :class:`CheckpointProblem` found by the last :meth:`latest_chain`.

    >>> storage = MemoryStorage()
    >>> storage.save_files(1, {"a.json": b"{}"}); storage.save_files(2, {"a.json": b"{}"})
    >>> del storage.files[2]["manifest.json"]      # the run died while storing checkpoint 2
    >>> storage.checkpoint_ids(), storage.latest_files()[0], len(storage.problems)
    ([1, 2], 1, 1)
    >>> storage.save_files(3, {"a.json": b"{}"}, base=1)       # incremental: built on checkpoint 1
    >>> [checkpoint_id for checkpoint_id, files in storage.latest_chain()]
    [3, 1]

    Args:
        retain: how many of the newest checkpoints to keep, with the checkpoints they are built on (older ones
            are deleted); ``None`` keeps them all.
    """

    def __init__(self, retain: int | None = None):
        self.retain = retain
        self.problems: list[CheckpointProblem] = []

    def save_files(self, checkpoint_id: int, files: dict[str, bytes], base: int | None = None) -> None:
        """Store one checkpoint: each file, then the manifest with every file's sha256 (rules 1 and 2) and, for
        an incremental checkpoint, its ``base`` (rule 5). A checkpoint stored again under the same id (a rerun
        batch) replaces the old one entirely."""
        self._delete(checkpoint_id)
        for path, data in files.items():
            self._put(checkpoint_id, path, data)
        manifest: dict = {"checkpoint_id": checkpoint_id}
        if base is not None:
            base_manifest = self._get(base, MANIFEST)
            if base_manifest is None:
                raise ValueError(f"checkpoint {checkpoint_id} is built on checkpoint {base}, which is not stored")
            manifest["base"] = {"checkpoint_id": base, "manifest_sha256": sha256(base_manifest)}
        manifest["files"] = {path: sha256(data) for path, data in files.items()}
        self._put(checkpoint_id, MANIFEST, json.dumps(manifest, indent=1).encode("utf-8"))
        if self.retain is not None:
            needed = set()
            for kept in self.checkpoint_ids()[-self.retain :]:
                while kept is not None and kept not in needed:
                    needed.add(kept)
                    kept = self._base_of(kept)
            for old in self.checkpoint_ids():
                if old not in needed:
                    self._delete(old)

    def checkpoint_ids(self) -> list[int]:
        """Ids of every stored checkpoint, complete or not, oldest first."""
        return sorted(self._ids())

    def latest_files(self) -> tuple[int, dict[str, bytes]] | None:
        """The newest usable checkpoint as ``(id, {path: bytes})`` (rules 2-5); ``None`` when there is none.
        What was skipped, and why, is in ``self.problems``."""
        chain = self.latest_chain()
        return None if chain is None else chain[0]

    def latest_chain(self) -> list[tuple[int, dict[str, bytes]]] | None:
        """The newest usable checkpoint and every checkpoint it is built on, newest first, as
        ``[(id, {path: bytes}), ...]`` (one entry for a full checkpoint), skipping torn and corrupt ones and
        those built on one (rules 2-5); ``None`` when there is none. The skipped ones are in ``self.problems``."""
        self.problems = []
        for checkpoint_id in reversed(self.checkpoint_ids()):
            chain, problem = self._verified_chain(checkpoint_id)
            if problem is None:
                return chain
            self.problems.append(problem)
        return None

    def chain(self, checkpoint_id: int) -> list[tuple[int, dict[str, bytes]]]:
        """One checkpoint and every checkpoint it is built on, newest first (as :meth:`latest_chain`); raises
        ``ValueError`` naming the problem when it is not usable."""
        chain, problem = self._verified_chain(checkpoint_id)
        if problem is not None:
            raise ValueError(str(problem))
        return chain

    def _verified_chain(self, checkpoint_id: int) -> tuple[list, CheckpointProblem | None]:
        chain, current = [], checkpoint_id
        files, manifest, problem = self._verified(current)
        while problem is None:
            chain.append((current, files))
            base = manifest.get("base")
            if base is None:
                return chain, None
            raw = self._get(base["checkpoint_id"], MANIFEST)
            files, manifest, problem = self._verified(base["checkpoint_id"])
            if problem is None and sha256(raw) != base["manifest_sha256"]:
                problem = CheckpointProblem(
                    base["checkpoint_id"],
                    f"chk-{base['checkpoint_id']}/{MANIFEST}",
                    f"is not the one checkpoint {current} was built on (checkpoint "
                    f"{base['checkpoint_id']} was stored again since)",
                )
            current = base["checkpoint_id"]
        if problem.checkpoint_id != checkpoint_id:
            problem = CheckpointProblem(
                checkpoint_id,
                problem.path,
                f"{problem.reason}, and checkpoint {checkpoint_id} is incremental: it needs checkpoint {current} whole",
            )
        return [], problem

    def _verified(self, checkpoint_id: int) -> tuple[dict[str, bytes], dict, CheckpointProblem | None]:
        """One checkpoint's files and manifest, checked against the manifest (rules 2 and 3)."""
        folder = f"chk-{checkpoint_id}"
        raw = self._get(checkpoint_id, MANIFEST)
        if raw is None:
            return (
                {},
                {},
                CheckpointProblem(
                    checkpoint_id,
                    f"{folder}/{MANIFEST}",
                    "is missing: the checkpoint is torn (the run died while storing it)",
                ),
            )
        try:
            manifest = json.loads(raw.decode("utf-8"))
        except ValueError:
            return {}, {}, CheckpointProblem(checkpoint_id, f"{folder}/{MANIFEST}", "is not valid JSON")
        files = {}
        for path, digest in manifest["files"].items():
            data = self._get(checkpoint_id, path)
            if data is None:
                return (
                    {},
                    {},
                    CheckpointProblem(checkpoint_id, f"{folder}/{path}", "is missing: the checkpoint is torn"),
                )
            if sha256(data) != digest:
                return (
                    {},
                    {},
                    CheckpointProblem(
                        checkpoint_id, f"{folder}/{path}", "is corrupt (its sha256 differs from the manifest's)"
                    ),
                )
            files[path] = data
        return files, manifest, None

    def _base_of(self, checkpoint_id: int) -> int | None:
        """The checkpoint an incremental checkpoint is built on, as its manifest says (``None``: full or torn)."""
        raw = self._get(checkpoint_id, MANIFEST)
        try:
            base = json.loads(raw.decode("utf-8")).get("base") if raw is not None else None
        except ValueError:
            return None
        return None if base is None else base["checkpoint_id"]

    # -- the micro-batch offsets log (Spark's offsets/N) ----------------------------------------------------

    def log_offsets(self, batch_id: int, entry: dict) -> None:
        """Write the offsets log entry of a batch before the batch reads anything."""
        self._put_log(batch_id, encode_json(entry))

    def offsets(self, batch_id: int) -> dict | None:
        """The offsets log entry of a batch, or ``None`` when the batch never started."""
        data = self._get_log(batch_id)
        return None if data is None else decode_json(data)

    # -- where the bytes go: one subclass per medium ---------------------------------------------------------

    def _put(self, checkpoint_id: int, path: str, data: bytes) -> None:
        raise NotImplementedError

    def _get(self, checkpoint_id: int, path: str) -> bytes | None:
        raise NotImplementedError

    def _ids(self) -> list[int]:
        raise NotImplementedError

    def _delete(self, checkpoint_id: int) -> None:
        raise NotImplementedError

    def _put_log(self, batch_id: int, data: bytes) -> None:
        raise NotImplementedError

    def _get_log(self, batch_id: int) -> bytes | None:
        raise NotImplementedError


class MemoryStorage(CheckpointStorage):
    """Checkpoints as bytes in memory: ``self.files = {checkpoint_id: {path: bytes}}`` and
    ``self.log = {batch_id: bytes}``. It survives a simulated crash because the run does not own it.

    >>> storage = MemoryStorage()
    >>> storage.save_files(1, {"a.json": b"{}"}); sorted(storage.files[1])
    ['a.json', 'manifest.json']
    """

    def __init__(self, retain: int | None = None):
        super().__init__(retain)
        self.files: dict[int, dict[str, bytes]] = {}  # {checkpoint_id: {path: bytes}}
        self.log: dict[int, bytes] = {}  # {batch_id: offsets log entry}

    def _put(self, checkpoint_id, path, data):
        self.files.setdefault(checkpoint_id, {})[path] = bytes(data)

    def _get(self, checkpoint_id, path):
        return self.files.get(checkpoint_id, {}).get(path)

    def _ids(self):
        return list(self.files)

    def _delete(self, checkpoint_id):
        self.files.pop(checkpoint_id, None)

    def _put_log(self, batch_id, data):
        self.log[batch_id] = data

    def _get_log(self, batch_id):
        return self.log.get(batch_id)


class DirectoryStorage(CheckpointStorage):
    """Checkpoints in a folder: ``chk-<id>/`` per checkpoint (its files and ``manifest.json``) and
    ``offsets/<batch id>`` for the micro-batch offsets log. Every file is written to ``<name>.tmp`` and then
    renamed into place.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as root:
    ...     DirectoryStorage(root).save_files(7, {"state/totals/0.json": b"{}"})
    ...     print(file_tree(root))
    chk-7/manifest.json  (131 bytes)
    chk-7/state/totals/0.json  (2 bytes)
    """

    def __init__(self, root, retain: int | None = None):
        super().__init__(retain)
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.folders: dict = {}  # {checkpoint id or "offsets": {folders made in it}}: made once, not per file

    def _write(self, path: Path, data: bytes, owner) -> None:
        made = self.folders.setdefault(owner, set())
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        temporary = path.with_name(path.name + ".tmp")
        with open(temporary, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)  # atomic: the file appears whole, or not at all

    def _read(self, path: Path) -> bytes | None:
        return path.read_bytes() if path.is_file() else None

    def _put(self, checkpoint_id, path, data):
        self._write(self.root / f"chk-{checkpoint_id}" / path, data, checkpoint_id)

    def _get(self, checkpoint_id, path):
        return self._read(self.root / f"chk-{checkpoint_id}" / path)

    def _ids(self):
        return [int(p.name[4:]) for p in self.root.glob("chk-*") if p.is_dir() and p.name[4:].isdigit()]

    def _delete(self, checkpoint_id):
        self.folders.pop(checkpoint_id, None)
        shutil.rmtree(self.root / f"chk-{checkpoint_id}", ignore_errors=True)

    def _put_log(self, batch_id, data):
        self._write(self.root / "offsets" / str(batch_id), data, "offsets")

    def _get_log(self, batch_id):
        return self._read(self.root / "offsets" / str(batch_id))


def file_tree(root) -> str:
    """The files under a folder, one per line with its size, sorted: how the tutorial shows what a checkpoint
    folder (ministream's or Spark's) holds.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as root:
    ...     DirectoryStorage(root).log_offsets(0, {"batch_id": 0})
    ...     print(file_tree(root))
    offsets/0  (18 bytes)
    """
    root = Path(root)
    lines = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        lines.append(f"{path.relative_to(root).as_posix()}  ({path.stat().st_size} bytes)")
    return "\n".join(lines)


def folder_outline(root) -> str:
    """The files under a folder in short: hidden files (Hadoop's ``.crc`` checksums) left out, and paths that
    differ only in their numbers on one line, each varying number shown as its range (``offsets/{0..4}``).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as root:
    ...     storage = DirectoryStorage(root)
    ...     for batch_id in range(3):
    ...         storage.log_offsets(batch_id, {}); storage.save_files(batch_id, {"state/totals/0.json": b"{}"})
    ...     print(folder_outline(root))
    chk-{0..2}/manifest.json
    chk-{0..2}/state/totals/0.json
    offsets/{0..2}
    """
    import re

    root = Path(root)
    groups: dict[str, list[tuple[int, ...]]] = {}  # {path with {} for numbers: [the numbers of each file]}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in relative.split("/")):
            continue
        numbers = tuple(int(n) for n in re.findall(r"\d+", relative))
        groups.setdefault(re.sub(r"\d+", "{}", relative), []).append(numbers)
    lines = []
    for template, found in groups.items():
        shown = []
        for position in range(len(found[0])):
            values = sorted({numbers[position] for numbers in found})
            if len(values) == 1:
                shown.append(str(values[0]))
            elif values == list(range(values[0], values[-1] + 1)):
                shown.append(f"{{{values[0]}..{values[-1]}}}")
            else:
                shown.append("{" + ",".join(map(str, values)) + "}")
        lines.append(template.format(*shown))
    return "\n".join(sorted(lines))
