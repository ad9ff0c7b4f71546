"""The ministream command line: lessons, run, errors in the user's terms."""

import json

import pytest

from ministream.tools.cli import main


def test_lessons_lists_every_lesson(capsys):
    """`ministream lessons` prints one line per lesson: its name and its title."""
    from ministream.lessons import all_lessons

    assert main(["lessons"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[0] for line in lines] == [lesson.name for lesson in all_lessons()]


def test_run_with_trace_explains_each_emitted_row(capsys):
    """`ministream run LESSON --trace` says why each row was emitted."""
    assert main(["run", "running-aggregation", "--trace"]) == 0
    out = capsys.readouterr().out
    assert (
        "[totals] emit: key 'b' emitted: updated in this batch (update mode emits the keys a batch "
        "touched) -> {key: b, count: 3, sum: 13}"
    ) in out


@pytest.mark.parametrize(
    "line, message",
    [
        ("not json", "events.jsonl line 2: "),
        ('{"batch": 0, "ts": "2024-01-01T10:00:00Z", "value": 1}', "events.jsonl line 2, field 'key': "),
        ('{"batch": 0, "key": "a", "value": 1}', "events.jsonl line 2, field 'ts': "),
        (
            '{"batch": 0, "ts": "yesterday", "key": "a", "value": 1}',
            "line 2, field 'ts': 'yesterday' is not an ISO-8601 timestamp",
        ),
        ('{"batch": "one", "ts": "2024-01-01T10:00:00Z", "key": "a", "value": 1}', "line 2, field 'batch': "),
        (
            '{"batch": 0, "ts": "2024-01-01T10:00:00Z", "key": "a", "value": 1}',
            "line 2, field 'batch': batch 0 comes after batch 1 on line 1",
        ),
    ],
)
def test_bad_events_file_names_the_line_and_exits_2(tmp_path, capsys, line, message):
    """A bad line in an events file gets an error naming the file, the line and the problem, and exit 2."""
    events = tmp_path / "events.jsonl"
    first = 1 if "comes after" in message else 0
    events.write_text(f'{{"batch": {first}, "ts": "2024-01-01T10:00:00Z", "key": "a", "value": 1}}\n' + line + "\n")
    assert main(["run", "running-aggregation", "--events", str(events)]) == 2
    assert message in capsys.readouterr().err


def test_unknown_lesson_lists_the_lessons(capsys):
    """An unknown lesson name is refused with the list of lessons."""
    assert main(["run", "no-such-lesson"]) == 2
    assert "there is no lesson 'no-such-lesson'; the lessons are: running-aggregation" in capsys.readouterr().err


def test_bad_param_syntax(capsys):
    """--param without NAME=VALUE is refused with an example."""
    assert main(["run", "running-aggregation", "--param", "mode"]) == 2
    assert "--param takes NAME=VALUE" in capsys.readouterr().err


def test_dead_letters_keep_bad_lines_with_their_reason(tmp_path, capsys):
    """With --dead-letters, bad lines are set aside with their reason and the good ones still run."""
    events = tmp_path / "events.jsonl"
    events.write_text(
        '{"batch": 0, "ts": "2024-01-01T10:00:00Z", "key": "a", "value": 1}\n'
        '{"batch": 0, "ts": "2024-01-01T10:00:01Z", "key": "a", "value": NaN}\n'
        '{"batch": 1, "ts": "2024-01-01T10:00:02Z", "value": 2}\n'
        '{"batch": 1, "ts": "2024-01-01T10:00:03Z", "key": "a", "value": 4}\n'
    )
    letters = tmp_path / "dead.jsonl"
    assert main(["run", "running-aggregation", "--events", str(events), "--dead-letters", str(letters)]) == 0
    out = capsys.readouterr().out
    assert f"2 bad lines of {events} set aside in {letters}" in out
    assert "batch 1 (no watermark): 1 row\n  {key: a, count: 2, sum: 5}" in out
    kept = [json.loads(line) for line in letters.read_text().splitlines()]
    assert [(k["line"], k["reason"].split(":")[0]) for k in kept] == [(2, "field 'value'"), (3, "field 'key'")]
    assert kept[1]["text"] == '{"batch": 1, "ts": "2024-01-01T10:00:02Z", "value": 2}'


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["run", "tumbling-window", "--param", "size=ten seconds"],
            "--param size: cannot read 'ten seconds' as a duration: write it like '10 seconds' or '1 minute 30 seconds'",
        ),
        (
            ["run", "tumbling-window", "--param", "size=0 seconds"],
            "--param size: must be longer than zero, got '0 seconds'",
        ),
        (
            ["run", "sliding-window", "--param", "slide=-2 seconds"],
            "--param slide: must be longer than zero, got '-2 seconds'",
        ),
        (
            ["run", "session-window", "--param", "gap=0 seconds"],
            "--param gap: must be longer than zero, got '0 seconds'",
        ),
        (["run", "late-data", "--param", "delay=-1 second"], "--param delay: cannot be negative, got '-1 second'"),
        (
            ["run", "session-window", "--param", "mode=update"],
            "--param mode: must be one of append, complete, not 'update'",
        ),
        (
            ["run", "running-aggregation", "--param", "mode=append"],
            "--param mode: must be one of update, complete, not 'append'",
        ),
        (
            ["run", "running-aggregation", "--param", "window=10 seconds"],
            "lesson 'running-aggregation' has no parameter 'window'; it has: mode",
        ),
        (
            ["run", "outer-join", "--param", "gap=5 seconds"],
            "lesson 'outer-join' has no parameter 'gap'; it has: how, within, delay, window, policy",
        ),
    ],
)
def test_a_misconfigured_param_exits_2_with_the_reason(capsys, args, message):
    """A duration that does not parse, a window, slide or gap of zero or less, a negative delay, an output mode
    the lesson refuses (append without a watermark, a session window in update mode) and a parameter the lesson
    does not have: each exits 2 before anything runs, with the reason."""
    assert main(args) == 2
    assert capsys.readouterr().err == f"ministream: error: {message}\n"


def test_an_empty_events_file_exits_2_with_the_reason(tmp_path, capsys):
    """An events file with no event at all is refused, naming the file and showing a good line."""
    events = tmp_path / "events.jsonl"
    events.write_text("")
    assert main(["run", "running-aggregation", "--events", str(events)]) == 2
    assert capsys.readouterr().err == (
        f"ministream: error: {events}: the file has no events: write one JSON object "
        'per line, like {"batch": 0, "ts": "2024-01-01T10:00:05Z", "key": "a", '
        '"value": 1.0}\n'
    )


@pytest.mark.spark
def test_compare_says_which_join_sparks_optimizer_removes(capsys):
    """`ministream compare outer-join --param window=max` says, above the table, that Spark removes the join
    and that ministream does the same; the two engines then agree batch for batch."""
    assert main(["compare", "outer-join", "--param", "window=max", "--param", "policy=max"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == (
        "Spark's optimizer, followed by ministream: step 'join': removed by Spark (EliminateOuterJoin): passes on "
        "the left rows"
    )
    assert lines[-1].startswith("outer-join: 6 of 6 batches match")


@pytest.mark.spark
def test_compare_spark_reading_shows_what_spark_reads_of_each_bad_line(tmp_path, capsys):
    """`compare --events F --spark-reading`: each line ministream sets aside, beside what Spark's JSON reader
    reads from it; then the twin runs on Spark's reading of every line, and the table shows what the bad lines
    change (here the line without a key is counted under the null key, and a line read with a null value
    counts for key a). Without --events, or with --all, it is refused; with --dead-letters the bad lines are written too."""
    path = tmp_path / "events.jsonl"
    path.write_text(
        '{"batch": 0, "ts": "2024-01-01T10:00:01Z", "key": "a", "value": 1}\n'
        '{"batch": 0, "ts": "2024-01-01T10:00:05Z", "value": 3}\n'
        '{"batch": 0, "ts": "2024-01-01T10:00:06Z", "key": "a", "value": "x"}\n'
        '{"batch": 1, "ts": "2024-01-01T10:00:15Z", "key": "a", "value": 4}\n'
    )
    letters = tmp_path / "dead.jsonl"
    assert main(["compare", "late-data", "--events", str(path), "--spark-reading", "--dead-letters", str(letters)]) == 1
    out = capsys.readouterr().out
    assert [json.loads(line)["line"] for line in letters.read_text().splitlines()] == [2, 3]
    assert f"2 bad lines of {path}: ministream sets them aside, and Spark's JSON reader (mode PERMISSIVE) reads:" in out
    assert "Spark reads {'ts': '2024-01-01T10:00:05Z', 'key': null, 'value': 3.0}\n" in out
    assert "Spark reads {'ts': '2024-01-01T10:00:06Z', 'key': 'a', 'value': null}, malformed (FAILFAST" in out
    assert "only in Spark:      {key: None, window_start: 2024-01-01T10:00:00Z" in out
    assert main(["compare", "late-data", "--spark-reading"]) == 2
    assert "give it with --events FILE" in capsys.readouterr().err
    assert main(["compare", "--all", "--spark-reading"]) == 2
    assert "--spark-reading compares one lesson: give its name" in capsys.readouterr().err
