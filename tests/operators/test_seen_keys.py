"""The seen keys of a deduplication (operators/seen_keys.py): the index by expiry and the tables by second forget
exactly the keys a scan of every key would, and the checkpoint's layout by key group holds the same keys."""

import random

from ministream.operators.seen_keys import SeenBySecond, SeenKeys
from ministream.state.keygroups import key_group_of


def test_the_runs_forget_what_a_scan_forgets():
    """Over 50 batches of keys with disordered expiries (some kept forever, some stored again after they were
    forgotten), each watermark forgets through the runs the keys whose expiry it reached, as a scan of a plain
    dict does, and leaves the same keys."""
    rng = random.Random(3)
    seen, plain = SeenKeys(), {}
    for batch in range(50):
        stored, expiries = [], []
        for i in range(200):
            key = f"k{rng.randrange(300)}"
            if key in plain:
                continue
            at = None if rng.random() < 0.05 else batch * 100 + i // 2 + rng.randrange(-80, 300)
            seen.expires[key] = plain[key] = at
            stored.append(key)
            expiries.append(at)
        seen.index(stored, expiries)
        watermark = batch * 100 - 50
        due = sorted(key for key, at in plain.items() if at is not None and at <= watermark)
        for key in due:
            del plain[key]
        assert sorted(seen.evict(watermark)) == due
        assert seen.expires == plain


def test_a_checkpoint_layout_holds_the_same_keys_and_restores_them():
    """by_key_group splits the keys by their key group (of the marked keys only, when given); load makes
    a layout that evicts as the original does."""
    seen = SeenKeys()
    for key, at in (("a", 10), ("b", 30), ("c", None)):
        seen.expires[key] = at
    seen.index(["a", "b", "c"], [10, 30, None])
    groups = seen.by_key_group()
    assert groups == {key_group_of("a"): {"a": 10}, key_group_of("b"): {"b": 30}, key_group_of("c"): {"c": None}}
    assert seen.by_key_group(["b", "gone"]) == {key_group_of("b"): {"b": 30}}
    restored = SeenKeys()
    restored.load(groups)
    assert restored.evict(20) == ["a"] and restored.expires == {"b": 30, "c": None}


def test_the_tables_by_second_forget_what_a_scan_forgets():
    """Over 50 batches of (key, event time) keys with disordered event times, some far behind, stored in the
    table of their expiry's second, each watermark (inside a second, or on its last or first millisecond)
    forgets the keys whose expiry it reached, as a scan of a plain dict does, and leaves the same keys."""
    rng = random.Random(5)
    seen, plain = SeenBySecond(), {}
    for batch in range(50):
        for _ in range(200):
            at = max(0, batch * 300 + rng.randrange(-900, 300))
            key = (f"k{rng.randrange(20)}", at)
            table = seen.table(at // 1_000)
            if key in table:
                continue
            table[key] = plain[key] = at
        watermark = batch * 300 - rng.choice([1, 0, 150, 999, 1_000])
        due = sorted(key for key, at in plain.items() if at <= watermark)
        for key in due:
            del plain[key]
        assert sorted(seen.evict(watermark)) == due
        assert {key: at for table in seen.seconds.values() for key, at in table.items()} == plain
        assert seen.size() == len(plain)


def test_the_tables_by_second_make_the_same_checkpoint_layout():
    """SeenBySecond.by_key_group gives the layout SeenKeys gives for the same keys (of the marked keys only,
    when given), and load puts each key back in the table of its second, a key kept forever in the table None."""
    entries = {("a", 900): 900, ("b", 1_500): 1_500, ("c", None): None}
    seen, flat = SeenBySecond(), SeenKeys()
    for key, at in entries.items():
        seen.table(None if at is None else at // 1_000)[key] = flat.expires[key] = at
    assert seen.by_key_group() == flat.by_key_group()
    assert seen.by_key_group([("b", 1_500), ("gone", 1)]) == flat.by_key_group([("b", 1_500)])
    restored = SeenBySecond()
    restored.load(flat.by_key_group())
    assert restored.seconds == {0: {("a", 900): 900}, 1: {("b", 1_500): 1_500}, None: {("c", None): None}}
    assert restored.evict(2_000) == [("a", 900), ("b", 1_500)] and restored.size() == 1
