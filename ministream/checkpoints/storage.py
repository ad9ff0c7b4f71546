"""Checkpoint storage: where checkpoints are kept, and how a half-written or damaged one is recognized.

A checkpoint is a small set of named parts (``checkpoints/coordinator.py`` says what is in them,
``checkpoints/serialization.py`` how state becomes bytes: ``checkpoint.json``, ``state/<step>/<subtask>.json``...)
and a **manifest** that lists every part with its **sha256**. The rules that make a crash *while storing*
harmless:

1. a checkpoint is written under a temporary name, then renamed into place (a rename is atomic: a reader sees
   the whole of it or none of it);
2. the manifest is written last: a checkpoint without a manifest is **torn** (the run died while storing it);
3. a part whose sha256 differs from the manifest's, or that is missing, makes the checkpoint **corrupt**
   (missing: torn);
4. recovery takes the newest checkpoint that is neither, and reports each one it skipped, naming the file;
5. an *incremental* checkpoint (``state/changes.py``) holds only what changed since its **base**, the checkpoint
   before it: its manifest names the base and the base manifest's sha256. It is usable only when its base is,
   and is still the one it was built on (a batch run again stores its checkpoint again, under the same id).
   Deleting old checkpoints (``retain``) keeps every base a kept checkpoint is built on.

The micro-batch model also keeps Spark's *offsets log*: ``offsets/<batch id>`` is written before batch k reads
anything (its watermarks and source offsets), so a batch that crashed is run again exactly as it first ran.

:class:`MemoryStorage` (the default) keeps the parts in a dict, ``manifest.json`` among them, so the same checks
run in every test; :class:`DirectoryStorage` writes each checkpoint to **one file** in a folder a learner can
open, ``chk-<id>``: its parts one after the other, then the manifest as the last line, which also gives each
part's place in the file. One file, not a folder of files: creating a file costs the operating system far more
than writing the few kilobytes of a small state into it, and a micro-batch run checkpoints at every batch.

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
        self.manifest_sha256: dict[int, str] = {}  # {checkpoint id: its manifest's sha256}, of those stored here

    def save_files(self, checkpoint_id: int, files: dict[str, bytes], base: int | None = None) -> None:
        """Store one checkpoint: its parts, then the manifest with every part's sha256 (rules 1 and 2) and, for
        an incremental checkpoint, its ``base`` (rule 5). A checkpoint stored again under the same id (a rerun
        batch) replaces the old one entirely."""
        manifest: dict = {"checkpoint_id": checkpoint_id}
        if base is not None:
            base_sha256 = self.manifest_sha256.get(base)
            if base_sha256 is None:  # not stored by this object (a restored run): read it
                base_manifest = self._get_manifest(base)
                if base_manifest is None:
                    raise ValueError(f"checkpoint {checkpoint_id} is built on checkpoint {base}, which is not stored")
                base_sha256 = sha256(base_manifest)
            manifest["base"] = {"checkpoint_id": base, "manifest_sha256": base_sha256}
        manifest["files"] = {path: sha256(data) for path, data in files.items()}
        self.manifest_sha256[checkpoint_id] = sha256(self._put_checkpoint(checkpoint_id, files, manifest))
        if self.retain is not None:
            needed = set()
            for kept in self.checkpoint_ids()[-self.retain :]:
                while kept is not None and kept not in needed:
                    needed.add(kept)
                    kept = self._base_of(kept)
            for old in self.checkpoint_ids():
                if old not in needed:
                    self._delete(old)
                    self.manifest_sha256.pop(old, None)

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
            files, manifest, problem = self._verified(base["checkpoint_id"])
            if problem is None and manifest["sha256"] != base["manifest_sha256"]:
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
        """One checkpoint's parts and manifest (with its own sha256 added, as ``"sha256"``), checked against the
        manifest (rules 2 and 3)."""
        folder = f"chk-{checkpoint_id}"
        raw, parts = self._get_checkpoint(checkpoint_id)
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
        manifest["sha256"] = sha256(raw)
        files = {}
        for path, digest in manifest["files"].items():
            data = parts.get(path)
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
        raw = self._get_manifest(checkpoint_id)
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

    def parts(self, checkpoint_id: int) -> str:
        """The parts of one stored checkpoint, one per line with its size, in the order they were stored, the
        manifest last: what a checkpoint holds, whatever the medium.

        >>> storage = MemoryStorage(); storage.save_files(1, {"checkpoint.json": b"{}", "state/t/0.json": b"[]"})
        >>> print(storage.parts(1))
        checkpoint.json  (2 bytes)
        state/t/0.json  (2 bytes)
        manifest.json  (215 bytes)
        """
        raw, parts = self._get_checkpoint(checkpoint_id)
        lines = [f"{path}  ({len(data)} bytes)" for path, data in parts.items()]
        return "\n".join(lines + ([] if raw is None else [f"{MANIFEST}  ({len(raw)} bytes)"]))

    def _put_checkpoint(self, checkpoint_id: int, files: dict[str, bytes], manifest: dict) -> bytes:
        """Store the parts, then the manifest (as this medium encodes it: returned, for its sha256)."""
        raise NotImplementedError

    def _get_checkpoint(self, checkpoint_id: int) -> tuple[bytes | None, dict[str, bytes]]:
        """The manifest's bytes (``None``: no manifest) and the parts found, ``{path: bytes}``."""
        raise NotImplementedError

    def _get_manifest(self, checkpoint_id: int) -> bytes | None:
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

    def _put_checkpoint(self, checkpoint_id, files, manifest):
        raw = json.dumps(manifest, indent=1).encode("utf-8")
        self.files[checkpoint_id] = {**{path: bytes(data) for path, data in files.items()}, MANIFEST: raw}
        return raw

    def _get_checkpoint(self, checkpoint_id):
        files = dict(self.files.get(checkpoint_id, {}))
        return files.pop(MANIFEST, None), files

    def _get_manifest(self, checkpoint_id):
        return self.files.get(checkpoint_id, {}).get(MANIFEST)

    def _ids(self):
        return list(self.files)

    def _delete(self, checkpoint_id):
        self.files.pop(checkpoint_id, None)

    def _put_log(self, batch_id, data):
        self.log[batch_id] = data

    def _get_log(self, batch_id):
        return self.log.get(batch_id)


class DirectoryStorage(CheckpointStorage):
    """Checkpoints in a folder: one file ``chk-<id>`` per checkpoint and ``offsets/<batch id>`` for the
    micro-batch offsets log. Every file is written to ``<name>.tmp``, synced to disk, then renamed into place.

    A checkpoint's file holds its parts one after the other, each followed by a newline, then its manifest,
    on one line: ``{"checkpoint_id", "base", "files": {part: sha256}, "at": {part: [offset, length]}}``. The
    manifest is written last and read first (the file's last line): a file that does not end with one is
    torn; a part it lists that the file is too short to hold is missing.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as root:
    ...     storage = DirectoryStorage(root)
    ...     storage.save_files(7, {"checkpoint.json": b"{}", "state/totals/0.json": b"[1, 2]"})
    ...     print(file_tree(root))
    ...     print(storage.parts(7))
    chk-7  (286 bytes)
    checkpoint.json  (2 bytes)
    state/totals/0.json  (6 bytes)
    manifest.json  (275 bytes)
    """

    def __init__(self, root, retain: int | None = None):
        super().__init__(retain)
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.log_folder_made = False  # offsets/ is made once, at the first entry

    def _write(self, path: Path, chunks) -> None:
        temporary = path.with_name(path.name + ".tmp")
        with open(temporary, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)  # atomic: the file appears whole, or not at all

    def _read(self, path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return None

    def _put_checkpoint(self, checkpoint_id, files, manifest):
        at, offset = {}, 0
        for path, data in files.items():
            at[path] = [offset, len(data)]
            offset += len(data) + 1
        raw = json.dumps({**manifest, "at": at}, ensure_ascii=True).encode("utf-8")  # one line
        chunks = [piece for data in files.values() for piece in (data, b"\n")]
        self._write(self.root / f"chk-{checkpoint_id}", [*chunks, raw, b"\n"])
        return raw

    def _get_checkpoint(self, checkpoint_id):
        data = self._read(self.root / f"chk-{checkpoint_id}")
        if data is None:
            return None, {}
        body_end = data.rstrip(b"\n").rfind(b"\n") + 1  # the last line is the manifest
        raw = data[body_end:].rstrip(b"\n")
        try:
            manifest = json.loads(raw.decode("utf-8"))
        except ValueError:
            return None, {}  # no manifest at the end: the file was cut short
        if not isinstance(manifest, dict) or "at" not in manifest:
            return None, {}
        parts = {}
        for path, (offset, length) in manifest["at"].items():
            if offset + length <= body_end:
                parts[path] = data[offset : offset + length]
        return raw, parts

    def _get_manifest(self, checkpoint_id):
        return self._get_checkpoint(checkpoint_id)[0]

    def _ids(self):
        return [int(p.name[4:]) for p in self.root.glob("chk-*") if p.name[4:].isdigit() and p.is_file()]

    def _delete(self, checkpoint_id):
        (self.root / f"chk-{checkpoint_id}").unlink(missing_ok=True)

    def _put_log(self, batch_id, data):
        if not self.log_folder_made:
            (self.root / "offsets").mkdir(exist_ok=True)
            self.log_folder_made = True
        self._write(self.root / "offsets" / str(batch_id), [data])

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
    chk-{0..2}
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
