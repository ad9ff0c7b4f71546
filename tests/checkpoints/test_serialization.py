"""Serialization: state comes back equal from its JSON, the big plain tables take the fast path, and the file
stays readable: indented at the top, a line per key group below."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ministream.checkpoints.serialization import TAGS, decode_json, encode_json, is_plain, to_plain
from ministream.state.changes import StateDelta

atoms = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=4))
keys = st.one_of(st.sampled_from(TAGS), st.text(max_size=4), st.integers(), st.tuples(st.text(max_size=2)))
values = st.recursive(
    atoms,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, values, max_size=6))
def test_tables_come_back_equal_with_their_types(table):
    """A table of any keys (tag names among them) and values (lists holding tuples among them) comes back
    equal, a tuple still a tuple and an int key still an int."""
    back = decode_json(encode_json(table))
    assert back == table and repr(back) == repr(table)


def test_a_plain_table_is_handed_to_the_encoder_as_it_is():
    """A table of string keys and plain values (numbers, strings, lists of them) is not rebuilt entry by entry:
    the C encoder gets it as it is; one tuple inside makes it take the tagged path."""
    table = {f"key-{i}": [i, 1.5, None] for i in range(1_000)}
    assert to_plain(table) is table and is_plain(table.values())
    table["key-7"] = [(1, 2)]
    assert to_plain(table) is not table and to_plain(table)["key-7"] == [{"__tuple__": [1, 2]}]


def test_a_state_file_has_a_line_per_key_group():
    """A snapshot's file: the outer levels indented, then one line per key group holding all its keys."""
    snapshot = {"keyed": {3: {"aggregate": {"a": [1], "b": [2]}}, 90: {"aggregate": {"c": [3]}}}, "watermark": 5}
    lines = encode_json(snapshot).decode().splitlines()
    assert lines[3:5] == ['   [3, {"aggregate": {"a": [1], "b": [2]}}],', '   [90, {"aggregate": {"c": [3]}}]']
    assert lines[-2:] == [' "watermark": 5', "}"]


def test_a_delta_round_trips():
    """A ``StateDelta`` is stored as a record, by name and fields, and comes back equal."""
    delta = StateDelta(["aggregate"], {3: {"aggregate": {("a", 1): [2]}}}, {4: {"aggregate": ["gone"]}})
    assert decode_json(encode_json({"keyed": delta})) == {"keyed": delta}


def test_long_lines_are_written_compact_and_come_back_equal_whatever_they_hold():
    """A line too long to read is written compact (``one_line``: orjson, or json for what orjson would not write
    back exactly: NaN, infinities, integers beyond 64 bits, lone surrogates), and a key group too long to read
    is written packed (pickled): every table comes back equal, whatever it holds."""
    import math

    from ministream.checkpoints.serialization import READABLE_LINE, one_line

    plain = {f"key-{i}": [i, i / 2] for i in range(500)}
    assert len(one_line(plain)) > READABLE_LINE and '"key-0":[0,0.0]' in one_line(plain)
    specials = [float("nan"), float("inf"), -float("inf"), 2**64, -(2**70), "\ud800", None]
    for special in specials:
        table = {**plain, "odd": [special]}
        back = decode_json(encode_json({"keyed": {7: {"aggregate": table}}}))["keyed"][7]["aggregate"]
        assert back.keys() == table.keys() and back["key-499"] == [499, 249.5]
        value = back["odd"][0]
        assert math.isnan(value) if isinstance(special, float) and math.isnan(special) else value == special, (
            special,
            value,
        )


def test_a_big_state_is_written_packed_and_a_small_one_stays_readable():
    """A keyed state whose pickle passes ``PACKED_PART`` is one packed line (a ``__pickle__`` tag) below a
    readable top level; a window table comes back with its tuple keys, and an object held twice comes back as
    two objects, as JSON would give it."""
    big = {"keyed": {g: {"windows": {f"k{g}-{i}": {(0, 10): [i]} for i in range(200)}} for g in range(128)}, "w": 5}
    text = encode_json(big).decode()
    assert text.splitlines()[1].startswith(' "keyed": {"__pickle__": ') and text.splitlines()[2] == ' "w": 5'
    assert decode_json(encode_json(big)) == big
    shared = [1]
    back = decode_json(encode_json({"keyed": {3: {"t": {f"k{i}": shared for i in range(10_000)}}}}))
    assert back["keyed"][3]["t"]["k0"] == [1] and back["keyed"][3]["t"]["k0"] is not back["keyed"][3]["t"]["k1"]
    small = {"keyed": {3: {"windows": {"a": {(0, 10): [2]}}}}}
    assert "__pickle__" not in encode_json(small).decode() and decode_json(encode_json(small)) == small
