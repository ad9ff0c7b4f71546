"""Serialization: state as JSON a person can read, that comes back *equal* to what was stored.

State is JSON where JSON can say it, with tags where it cannot: tuples (``{"__tuple__": [...]}``, e.g. a
window ``(start, end)``), dicts whose keys are not strings (``{"__dict__": [[key, value], ...]}``: key groups
are ints, keys may be tuples), sets, and ministream's own records (the runtime's markers in the in-flight data
of unaligned checkpoints, and the ``StateDelta`` of an incremental checkpoint). Anything else, such as the
accumulator of a user's ``Custom`` aggregate, which may be any Python object, is pickled
(``{"__pickle__": "<base64>"}``): pickle is the only general way to store an arbitrary object, and only
ministream reads back what it wrote itself.

**What a person reads, what a machine reads.** A small state (every lesson's) is JSON to the last entry. A
big one is not read entry by entry by anyone: below the indented levels, a line too long to read
(:data:`READABLE_LINE`), or a whole part of the file whose pickle passes :data:`PACKED_PART` (the keyed state
of thousands of keys), is written *packed*: its pickle bytes, base64 text in a ``__pickle__`` tag
(:func:`packed_line`). Pickle is written and read in C, with no Python call per entry and no tags, since it
keeps every type as it is; a checkpoint of a big state then costs about what copying it costs. The file keeps
its outline (the top level stays readable), its checksum in the manifest, and its name.

**Why it is fast enough for a million keys.** Python's ``json`` module has an encoder and a decoder written
in C, about ten times faster than Python code walking the same data, and the ``orjson`` library's encoder is
ten times faster again, but only for plain JSON values and only without ``indent``. So:

1. :func:`to_plain` leaves a big ``{key: value}`` table as it is when its keys are strings and its values
   are JSON already (numbers, strings, lists of them): one look at the *types* present
   (``set(map(type, values))``, itself C-speed) instead of a Python call per entry; only the values that need
   a tag are visited one by one (:func:`from_plain` does the same on the way back), and a table of windows
   (tuples of numbers to plain values) is tagged in one comprehension;
2. :func:`encode_json` indents the first levels, where a reader looks for the structure, and writes each
   value below them on one line (:func:`packed_line`): a state file has a line per key group, or one packed
   line for a big state;
3. Python's cycle collector is paused while a file is encoded or decoded (:func:`collector_paused`): each
   time 700 more containers exist it looks at the newest, and now and then at *every* container in the
   process, so decoding a million lists would make it walk the whole state several times over, for nothing
   (data decoded from JSON holds no cycles).

>>> print(encode_json({"keyed": {38: {"aggregate": {"alice": [2, 5.0], ("bob", 1): [1, 1.0]}}}}).decode())
{
 "keyed": {
  "__dict__": [
   [38, {"aggregate": {"__dict__": [["alice", [2, 5.0]], [{"__tuple__": ["bob", 1]}, [1, 1.0]]]}}]
  ]
 }
}
>>> decode_json(encode_json({38: ("a", 1)}))
{38: ('a', 1)}
"""

from __future__ import annotations

import base64
import contextlib
import gc
import io
import json
import pickle
from collections import deque

import attrs
import orjson

from ministream.core.physical import Barrier, EndOfBatch, Watermark, WatermarkStatus
from ministream.state.changelog import LogPosition
from ministream.state.changes import StateDelta

ATOMS = frozenset({str, int, float, bool, type(None)})
"""The types JSON stores and gives back unchanged."""

TAGS = ("__tuple__", "__dict__", "__set__", "__record__", "__pickle__")
"""The keys that mark a tagged value: a plain dict holding one of them is stored in the ``__dict__`` form."""

INDENTED_LEVELS = 3
"""How many levels :func:`encode_json` indents; each value below is one line (state: a line per key group)."""

PACKED_PART = 64 * 1024
"""A part of a file below its top level whose pickle is longer than this many bytes (the keyed state of a few
thousand keys) is written as one packed line (:func:`packed_line`) instead of a line per key group."""

_ONE_LINE = json.JSONEncoder(separators=(", ", ": "), ensure_ascii=False, check_circular=False)
"""``json``'s C encoder, for the one-line values a person may read (:func:`one_line`). State holds no cycles
(a copy of one would never end), so it need not look for them."""

READABLE_LINE = 2_000
"""Lines up to this many bytes are written by ``json``, with a space after each comma and colon; longer
ones (a key group of a big state) by orjson, compact."""


def one_line(value) -> str:
    """JSON data as one line of JSON text.

    orjson writes it first (a library in Rust, many times faster than ``json``'s C encoder on big tables: see
    ``tutorials/benchmarks.md`` for what a million keys' snapshot costs). A line short enough to
    be read (:data:`READABLE_LINE`) is written again by ``json``, spaced. So is any line where orjson would not
    give the value back exactly: it writes NaN and the infinities as ``null`` (so a ``null`` anywhere in its
    text sends the value to ``json``, which writes ``NaN``), and refuses integers beyond 64 bits and lone
    surrogates. Files are read back with ``json``, which reads every integer exactly (orjson would read big
    ones as floats).

    >>> one_line({"a": [1, 2.5, "é"]}), one_line([float("nan"), None]), one_line(2**70)
    ('{"a": [1, 2.5, "é"]}', '[NaN, null]', '1180591620717411303424')
    >>> one_line({f"k{i}": [i] for i in range(500)})[:30]
    '{"k0":[0],"k1":[1],"k2":[2],"k'"""
    try:
        text = orjson.dumps(value)
    except orjson.JSONEncodeError:
        return _ONE_LINE.encode(value)
    if len(text) <= READABLE_LINE or b"null" in text:
        return _ONE_LINE.encode(value)
    return text.decode()


def pickled(value) -> bytes:
    """A value as pickle bytes (protocol 5), each object written where it occurs: the pickler's *fast* mode
    keeps no memo, so an object held twice comes back as two equal objects, as it would from JSON, never as
    one shared object that a change through one place would change in the other. (State holds no cycles.)

    >>> shared = [1]; back = pickle.loads(pickled([shared, shared])); back, back[0] is back[1]
    ([[1], [1]], False)"""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.fast = True
    pickler.dump(value)
    return buffer.getvalue()


def packed_line(value) -> str:
    """A value below the indented levels as one line: readable JSON (:func:`one_line`) when it is short
    enough to be read (:data:`READABLE_LINE`), otherwise its pickle bytes, base64 text in a ``__pickle__``
    tag. Pickle is written and read in C with no Python call per entry, keeps every type as it is (tuples,
    int keys, NaN, big integers) and needs no tags: a key group of a big state costs a few C calls.

    >>> packed_line({"a": [1, 2.5]}), packed_line({f"k{i}": [i] for i in range(500)})[:14]
    ('{"a": [1, 2.5]}', '{"__pickle__":')"""
    packed = pickled(value)
    if len(packed) <= READABLE_LINE:
        return one_line(to_plain(value))
    return _pickle_tag(packed)


def _pickle_tag(packed: bytes) -> str:
    return '{"__pickle__": "' + base64.b64encode(packed).decode("ascii") + '"}'


RECORDS = {cls.__name__: cls for cls in (Barrier, EndOfBatch, Watermark, WatermarkStatus, StateDelta, LogPosition)}
"""ministream's own record classes (the messages a channel holds, a state delta), stored by name and fields."""


def is_plain(values) -> bool:
    """Whether every value of a collection is JSON already, which JSON gives back equal: a string, a number,
    ``True``/``False``/``None``, or a list of those. Looks at the types present, not at each value in Python.

    >>> is_plain([1, "a", [2.0, None]]), is_plain([(1, 2)]), is_plain([[[1]]])
    (True, False, False)"""
    kinds = set(map(type, values))
    if kinds <= ATOMS:
        return True
    if not kinds <= ATOMS | {list}:
        return False
    items: list = []  # every item of every list value, gathered by C calls (list.extend), then typed at once
    deque(map(items.extend, values if kinds == {list} else filter(_is_list, values)), maxlen=0)
    return set(map(type, items)) <= ATOMS


def _flat_tuples(keys) -> bool:
    """Whether every key is a tuple of JSON atoms (a window ``(start, end)``), by the types present.

    >>> _flat_tuples([(0, 10), (10, 20)]), _flat_tuples([(0, (1, 2))]), _flat_tuples(["a"])
    (True, False, False)"""
    if set(map(type, keys)) != {tuple}:
        return False
    items: list = []
    deque(map(items.extend, keys), maxlen=0)
    return set(map(type, items)) <= ATOMS


def _is_list(value) -> bool:
    return type(value) is list


def _plain_table(value: dict) -> bool:
    """A dict JSON stores as it is: string keys (no tag among them) and plain values."""
    return _all_strings(value) and not any(tag in value for tag in TAGS) and is_plain(value.values())


def _all_strings(keys) -> bool:
    """Whether every key is a string: ``str.join`` checks each in C (it refuses anything else), faster than
    collecting the keys' types; the first key is looked at first, since raising an exception costs too."""
    if not isinstance(next(iter(keys), ""), str):
        return False
    try:
        "".join(keys)
    except TypeError:
        return False
    return True


def to_plain(value):
    """A value as JSON data that :func:`from_plain` turns back into an equal value.

    >>> to_plain({38: {"windows": {"a": {(0, 10_000): [2, 5.0]}}}})
    {'__dict__': [[38, {'windows': {'a': {'__dict__': [[{'__tuple__': [0, 10000]}, [2, 5.0]]]}}}]]}
    >>> from_plain(to_plain({("a", 1): (1, None)}))
    {('a', 1): (1, None)}
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return value if is_plain(value) else [to_plain(item) for item in value]
    if isinstance(value, tuple):  # a window (start, end), a composite key...
        return {"__tuple__": list(value) if is_plain(value) else [to_plain(item) for item in value]}
    if isinstance(value, dict):
        if _plain_table(value):
            return value  # the fast path: a table of strings to plain values, for the encoder as it is
        if all(isinstance(key, str) for key in value) and not any(tag in value for tag in TAGS):
            return {key: to_plain(item) for key, item in value.items()}
        if _flat_tuples(value.keys()) and is_plain(value.values()):  # {window: accumulators}: in one go
            return {"__dict__": [[{"__tuple__": list(key)}, item] for key, item in value.items()]}
        return {"__dict__": [[to_plain(key), to_plain(item)] for key, item in value.items()]}
    if isinstance(value, (set, frozenset)):
        return {"__set__": [to_plain(item) for item in sorted(value, key=repr)]}
    records = RECORDS
    if isinstance(value, records.get(type(value).__name__, ())):
        return {"__record__": type(value).__name__, "fields": to_plain(attrs.asdict(value, recurse=False))}
    return {"__pickle__": base64.b64encode(pickle.dumps(value)).decode("ascii")}


def from_plain(data):
    """The value that :func:`to_plain` made ``data`` from.

    >>> from_plain({"__dict__": [[{"__tuple__": [0, 10]}, [1, 2.0]]]})
    {(0, 10): [1, 2.0]}"""
    if isinstance(data, list):
        return data if is_plain(data) else [from_plain(item) for item in data]
    if not isinstance(data, dict):
        return data
    if "__tuple__" in data:
        items = data["__tuple__"]
        return tuple(items) if is_plain(items) else tuple(from_plain(item) for item in items)
    if "__dict__" in data:
        pairs = data["__dict__"]
        if any(type(pair) is dict for pair in pairs):  # some pairs written whole as packed lines
            return dict(_pair(pair) for pair in pairs)
        if _tagged_flat_tuples(pairs) and is_plain([item for _, item in pairs]):  # {window: accumulators}
            return {tuple(key["__tuple__"]): item for key, item in pairs}
        return {_hashable(from_plain(key)): from_plain(item) for key, item in pairs}
    if "__set__" in data:
        return {_hashable(from_plain(item)) for item in data["__set__"]}
    if "__record__" in data:
        return RECORDS[data["__record__"]](**from_plain(data["fields"]))
    if "__pickle__" in data:
        return pickle.loads(base64.b64decode(data["__pickle__"]))
    if is_plain(data.values()):
        return data  # the fast path: nothing below was tagged
    return {key: from_plain(item) for key, item in data.items()}


def _pair(pair) -> tuple:
    """One ``[key, value]`` of a ``__dict__`` list, which :func:`packed_line` may have written whole."""
    if type(pair) is dict:
        key, item = from_plain(pair)  # a pickle tag: the pair exactly as it was
        return key, item
    key, item = pair
    return _hashable(from_plain(key)), from_plain(item)


def _tagged_flat_tuples(pairs: list) -> bool:
    """Whether every key of ``[[key, item], ...]`` is a tagged tuple of atoms, ``{"__tuple__": [atoms]}``."""
    keys = [pair[0] for pair in pairs]
    if set(map(type, keys)) != {dict} or not all(len(key) == 1 and "__tuple__" in key for key in keys):
        return False
    items: list = []
    deque((items.extend(key["__tuple__"]) for key in keys), maxlen=0)
    return set(map(type, items)) <= ATOMS


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


@contextlib.contextmanager
def collector_paused():
    """Pause Python's cycle collector (``gc``) for the block; reference counting still frees everything.

    >>> with collector_paused(): gc.isenabled()
    False"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def encode_json(value) -> bytes:
    """A value as the bytes of a JSON file: the first :data:`INDENTED_LEVELS` levels indented, to be read by
    people, and each value below them on one line (:func:`one_line`).

    >>> print(encode_json({"offset": 3, "sources": {"events": {"offset": 3, "rows": [1, 2]}}}).decode())
    {
     "offset": 3,
     "sources": {
      "events": {
       "offset": 3,
       "rows": [1, 2]
      }
     }
    }"""
    with collector_paused():
        return _layout(value, 0).encode("utf-8", "surrogatepass")


def _layout(value, level: int) -> str:
    """``value`` as JSON text, indented at ``level``. Each one-line value is made plain (:func:`to_plain`, with
    its type checks) just before orjson writes it: a key group's entries are then still in the CPU's
    caches, which saves a tenth of the time on a million keys."""
    records = RECORDS
    name = type(value).__name__
    if 0 < level < INDENTED_LEVELS and value and isinstance(value, (dict, list, StateDelta)):
        packed = pickled(value)  # a big part of the file (the keyed state of many keys): one packed line
        if len(packed) > PACKED_PART:
            return _pickle_tag(packed)
    if level < INDENTED_LEVELS and isinstance(value, records.get(name, ())):
        fields = _layout(attrs.asdict(value, recurse=False), level + 1)
        return _block("{", [f'"__record__": "{name}"', f'"fields": {fields}'], "}", level)
    if level >= INDENTED_LEVELS:
        return packed_line(value)
    if not isinstance(value, (dict, list)) or not value:
        return one_line(to_plain(value))
    if isinstance(value, list):
        return _block("[", [_layout(item, level + 1) for item in value], "]", level)
    if all(isinstance(key, str) for key in value) and not any(tag in value for tag in TAGS):
        lines = [f"{one_line(key)}: {_layout(item, level + 1)}" for key, item in value.items()]
        return _block("{", lines, "}", level)
    pairs = _layout([[key, item] for key, item in value.items()], level + 1)  # JSON keys are strings only
    return _block("{", [f'"__dict__": {pairs}'], "}", level)


def _block(opening: str, lines: list[str], closing: str, level: int) -> str:
    inside = " " * (level + 1)
    return opening + "\n" + ",\n".join(inside + line for line in lines) + "\n" + " " * level + closing


def decode_json(data: bytes):
    """The value stored by :func:`encode_json`.

    >>> decode_json(encode_json({38: ("a", 1)}))
    {38: ('a', 1)}"""
    with collector_paused():
        return from_plain(json.loads(data.decode("utf-8", "surrogatepass")))
