"""Pipeline files (ministream/lessons/pipeline_file.py): a Python file with FIELDS and pipeline(events) is a
lesson, taken by every command where a lesson's name is; a file that is wrong says so in one line."""

import io
import re
from pathlib import Path

import pytest

from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.pipeline_file import PipelineFileError, load_pipeline_file, pipeline_lesson
from ministream.tools.cli import main
from ministream.tools.fuzz import check_script

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "my_pipeline.py"
EVENTS = ROOT / "examples" / "my-events.jsonl"


def run_cli(*args) -> tuple[int, str]:
    out = io.StringIO()
    return main([str(arg) for arg in args], out), out.getvalue()


def test_the_readme_example_file_runs():
    """The README's pipeline file on its events: the two windows that the watermark closes, in batch 3."""
    lesson = load_pipeline_file(EXAMPLE)
    assert (lesson.name, lesson.inputs, lesson.mode({})) == ("my_pipeline", ("events",), "append")
    output = lesson.run(lesson.read_script(EVENTS)).output()
    assert [len(batch.rows) for batch in output] == [0, 0, 0, 2]
    assert sorted((row["key"], row["window_start"] % 60_000, row["count"], row["sum"]) for row in output[3].rows) == [
        ("a", 0, 2, 4.0),
        ("b", 10_000, 1, 10.0),
    ]


def test_the_readme_shows_the_example_file():
    """The README includes the example file as it is, in under 15 lines."""
    text = EXAMPLE.read_text()
    assert f"<!-- include examples/my_pipeline.py -->\n```python\n{text}```" in (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 15


def test_run_takes_a_pipeline_file_where_it_takes_a_lesson():
    """`ministream run FILE --events E --trace` prints the file's output and why each row came out."""
    status, out = run_cli("run", EXAMPLE, "--events", EVENTS, "--trace")
    assert status == 0
    assert out.splitlines()[0] == (
        "my_pipeline: Totals per key and 10-second window, emitted once the watermark passes the window's end."
    )
    assert "[totals] emit: window [10:00:00, 10:00:10) of key 'a' emitted" in out
    assert "batch 3 (watermark 2024-01-01T10:00:20Z): 2 rows" in out


def test_get_lesson_loads_a_file_path():
    """get_lesson takes a .py path as it takes a lesson name."""
    assert get_lesson(str(EXAMPLE)).name == "my_pipeline"


def test_two_inputs_read_one_events_file_with_streams(tmp_path):
    """INPUTS names two inputs that share FIELDS; pipeline takes a stream for each; events say their stream."""
    path = tmp_path / "both.py"
    path.write_text(
        "from ministream import Count\n"
        'FIELDS = {"key": str}\n'
        'INPUTS = ("left", "right")\n'
        'OUTPUT_MODE = "update"\n'
        "def pipeline(left, right):\n"
        '    return left.key_by("key").aggregate("counts", right.key_by("key"), count=Count())\n'
    )
    events = tmp_path / "both.jsonl"
    events.write_text(
        '{"batch": 0, "stream": "left", "ts": "2024-01-01T10:00:01Z", "key": "a"}\n'
        '{"batch": 0, "stream": "right", "ts": "2024-01-01T10:00:02Z", "key": "a"}\n'
    )
    lesson = load_pipeline_file(path)
    assert lesson.inputs == ("left", "right")
    assert lesson.run(lesson.read_script(events)).output()[0].rows == [{"key": "a", "count": 2}]


@pytest.mark.spark  # compiling imports the compiler, which writes PySpark
def test_the_watermark_policy_reaches_the_twins_spark_settings():
    """WATERMARK_POLICY = "max" runs ministream with max and gives Spark the same policy (the twin's conf)."""
    lesson = pipeline_lesson(
        'FIELDS = {"key": str}\nINPUTS = ("left", "right")\nWATERMARK_POLICY = "max"\n'
        "def pipeline(left, right):\n    return left.union('both', right)\n",
        "both.py",
    )
    assert lesson.policy({}) == "max"
    assert lesson.spark_conf({})["spark.sql.streaming.multipleWatermarkPolicy"] == "max"


def test_events_named_in_the_file_are_the_default(tmp_path):
    """EVENTS names an events file next to the pipeline file: the run without --events reads it."""
    (tmp_path / "my.py").write_text(EXAMPLE.read_text() + 'EVENTS = "my.jsonl"\n')
    (tmp_path / "my.jsonl").write_text(EVENTS.read_text())
    status, out = run_cli("run", tmp_path / "my.py")
    assert status == 0 and "batch 3 (watermark 2024-01-01T10:00:20Z): 2 rows" in out


GOOD = 'from ministream import Count\nFIELDS = {"key": str}\ndef pipeline(events):\n    return events.key_by("key").aggregate("n", n=Count())\n'


@pytest.mark.parametrize(
    "text, message",
    [
        ("def pipeline(events):\n    return events\n", "f.py: no FIELDS: name the events' own columns"),
        ('FIELDS = {"key": str}\n', "f.py: no function pipeline(events): define one that takes the stream"),
        (GOOD.replace("str}", "list}"), "f.py: FIELDS['key'] is <class 'list'>: a column is str, float or int"),
        (GOOD.replace('"key": str', '"ts": str'), "f.py: FIELDS: 'ts' cannot be a column"),
        (GOOD.replace("def pipeline(events)", "def pipeline(a, b)"), "f.py: pipeline takes one stream per input"),
        (GOOD + 'OUTPUT_MODE = "updte"\n', "f.py: OUTPUT_MODE is one of 'append', 'update', 'complete', not 'updte'"),
        (GOOD + 'INPUTS = ("a", "b", "c")\n', "f.py: INPUTS names one or two inputs"),
        ("FIELDS = {\n", "f.py line 1: '{' was never closed"),
        ("import no_such_module\n", "f.py line 1: ModuleNotFoundError: No module named 'no_such_module'"),
    ],
    ids=[
        "no-fields",
        "no-pipeline",
        "bad-kind",
        "ts-field",
        "signature",
        "mode",
        "inputs",
        "syntax",
        "import",
    ],
)
def test_a_wrong_file_is_refused_in_one_line(text, message):
    """Each mistake in a pipeline file is one line that names the file and what is missing or wrong."""
    with pytest.raises(PipelineFileError) as error:
        pipeline_lesson(text, "f.py")
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


@pytest.mark.parametrize(
    "body, message",
    [
        (
            '    return events.key_by("key")\n',
            "f.py: pipeline(events) returned a keyed stream: add a step after key_by",
        ),
        ("    return 42\n", "f.py: pipeline(events) returned 42, not a stream"),
        ('    return events.with_watermark("ts", "5 seconds")\n', "f.py line 3: pipeline(events) failed: TypeError"),
        (
            '    return events.with_watermark("w", "time", "5 seconds")\n',
            "f.py: step 'w': the rows have no column 'time'",
        ),
    ],
    ids=["keyed", "not-a-stream", "type-error", "plan-refusal"],
)
def test_a_pipeline_that_fails_says_where(body, message):
    """A pipeline function that fails or returns no stream is refused as the file is loaded (its plan is the
    same whatever the events): one line with the file (and its line)."""
    with pytest.raises(PipelineFileError) as error:
        pipeline_lesson('FIELDS = {"key": str}\ndef pipeline(events):\n' + body, "f.py")
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


TWO_OUTPUTS = ROOT / "examples" / "two_outputs.py"


def test_a_pipeline_may_return_several_outputs():
    """A dict of streams is several outputs, each its own sink, in the order of the dict: the totals' windows
    close in the no-data batch 3, and the events over 2 come out in the batch that brought them (3 batches: a
    query with no state runs no batch without data)."""
    lesson = load_pipeline_file(TWO_OUTPUTS)
    assert lesson.outputs == ("per_window", "big_events")
    run = lesson.run(lesson.read_script(EVENTS))
    assert [len(batch.rows) for batch in run.output("per_window")] == [0, 0, 0, 2]
    assert [[row["value"] for row in batch.rows] for batch in run.output("big_events")] == [[10.0], [3.0], [7.0]]
    assert lesson.of_output("big_events").outputs == ("big_events",)


def test_run_shows_each_output_as_its_own_query():
    """`run --trace --accounting` on a file of two outputs: a block per output, each with its own query's
    trace, batches and account of the rows (the filter's query drops the event of value 1 and runs no
    no-data batch)."""
    status, out = run_cli("run", TWO_OUTPUTS, "--events", EVENTS, "--trace", "--accounting")
    assert status == 0
    first, second = out.split("output 'big_events' (its own query):\n")
    assert "output 'per_window' (its own query):" in first and "[no-data batch" in first
    assert "totals: 4 rows in: 4 aggregated; 2 rows out" in first and "big:" not in first
    assert "big: 4 rows in: 3 passed on, 1 dropped (filtered out)" in second and "no-data" not in second
    assert [out.count(line) for line in ("every row is accounted for", "batch 2 (watermark")] == [2, 2]


def test_the_continuous_model_runs_several_outputs_as_one_job():
    """In the continuous model the two outputs are one job, as in Flink: a block of arrivals per output, and one
    account of the rows for both (the window's step and the filter's side by side)."""
    status, out = run_cli("run", TWO_OUTPUTS, "--events", EVENTS, "--model", "continuous", "--accounting")
    assert status == 0 and "(its own query)" not in out
    assert [line for line in out.splitlines() if line.startswith("output ")] == [
        "output 'per_window':",
        "output 'big_events':",
    ]
    assert out.count("every row is accounted for") == 1
    assert "  big_events: 3 rows in: 3 written to the sink" in out.split("output 'big_events':")[1]


@pytest.mark.parametrize(
    "returned, message",
    [
        ('{"not a name": events}', "f.py: pipeline(events) returned an output named 'not a name': name each output"),
        ('{"n": events}', "f.py: pipeline(events) returned an output named 'n', the name of one of its steps"),
        ('{"counts": events.key_by("key")}', "f.py: pipeline(events) returned, as output 'counts', a keyed stream"),
        ('{"counts": 42}', "f.py: pipeline(events) returned, as output 'counts', 42, not a stream"),
    ],
    ids=["name", "step-name", "keyed", "not-a-stream"],
)
def test_wrong_outputs_are_refused_in_one_line(returned, message):
    """Each output is named like a variable, unlike the pipeline's steps, and is a stream."""
    body = f'    events.key_by("key").aggregate("n", n=Count())\n    return {returned}\n'
    with pytest.raises(PipelineFileError) as error:
        pipeline_lesson('from ministream import Count\nFIELDS = {"key": str}\ndef pipeline(events):\n' + body, "f.py")
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_a_crash_and_recovery_and_a_state_comparison_take_one_output(capsys):
    """``run --crash-at`` recovers one query, and ``compare --state`` and ``state --spark`` read one query's
    state: on a file of two outputs, each is refused without ``--output``, before anything runs, in one line that
    names the outputs and the way to choose one; an output the file does not have is refused the same way."""
    assert run_cli("run", TWO_OUTPUTS, "--events", EVENTS, "--crash-at", 2)[0] == 2
    assert run_cli("compare", TWO_OUTPUTS, "--events", EVENTS, "--state")[0] == 2
    assert run_cli("state", TWO_OUTPUTS, "--events", EVENTS, "--spark")[0] == 2
    assert run_cli("run", TWO_OUTPUTS, "--events", EVENTS, "--output", "totals")[0] == 2
    outputs = "two_outputs has 2 outputs, a query each (per_window, big_events): choose one with --output NAME"
    assert capsys.readouterr().err.splitlines() == [
        f"ministream: error: --crash-at crashes and recovers one query, and {outputs}",
        f"ministream: error: --state compares the state of one query, and {outputs}",
        f"ministream: error: --spark reads the state of one query, and {outputs}",
        "ministream: error: lesson 'two_outputs' has no output 'totals'; it has: per_window, big_events",
    ]


def test_one_output_runs_as_its_own_query_alone():
    """``--output NAME`` (``Lesson.of_output``) runs only the query that feeds that output, as Spark runs one
    ``writeStream``: the filter's query has no window and no no-data batch, the window's no filter."""
    lesson = load_pipeline_file(TWO_OUTPUTS).of_output("big_events")
    script = lesson.read_script(EVENTS)
    assert [step.name for step in lesson.pipeline(script, {}).steps] == ["events", "watermark", "big", "big_events"]
    assert [[row["value"] for row in batch.rows] for batch in lesson.run(script).output("big_events")] == [
        [10.0],
        [3.0],
        [7.0],
    ]
    status, out = run_cli("run", TWO_OUTPUTS, "--events", EVENTS, "--output", "per_window", "--accounting")
    assert status == 0 and out.count("output 'per_window' (its own query):") == 1 and "big_events" not in out
    assert "totals: 4 rows in: 4 aggregated; 2 rows out" in out and "big:" not in out


def test_one_output_is_crashed_and_recovered_and_its_state_shown():
    """``run --crash-at N --output NAME`` crashes the query of that output and recovers it from its last
    checkpoint: the windows' query gives the output of a run without a crash, its two windows closed in the
    no-data batch 3; ``state --output NAME`` shows the state of that query's steps alone."""
    status, out = run_cli("run", TWO_OUTPUTS, "--events", EVENTS, "--output", "per_window", "--crash-at", 2)
    assert status == 0, out
    assert "attempt at parallelism 1, from checkpoint 0: ran to the end" in out
    assert "recovered output 'per_window':\n" in out and "batch 3 (watermark 2024-01-01T10:00:20Z): 2 rows" in out
    assert out.splitlines()[-1] == "two_outputs: the recovered output equals the output of the run without a crash"
    status, out = run_cli("run", TWO_OUTPUTS, "--events", EVENTS, "--output", "big_events", "--crash-at", 1)
    assert status == 0 and out.count("value: ") == 3 and "equals the output of the run without a crash" in out
    status, out = run_cli("state", TWO_OUTPUTS, "--events", EVENTS, "--output", "per_window", "--batch", 2)
    assert status == 0
    assert out.splitlines()[2:4] == [
        "  totals: windows",
        "    'a': {(1704103200000, 1704103210000): [2, 4.0], (1704103220000, 1704103230000): [1, 7.0]}",
    ]


def test_the_command_line_reports_a_missing_file_and_no_events(tmp_path, capsys):
    """A path that is not there, and a file run without events: exit 2 and one line each."""
    assert run_cli("run", tmp_path / "nothing.py")[0] == 2
    (tmp_path / "ok.py").write_text(GOOD)
    assert run_cli("run", tmp_path / "ok.py")[0] == 2
    err = capsys.readouterr().err.splitlines()
    assert (
        err[0]
        == f"ministream: error: {tmp_path / 'nothing.py'}: there is no such pipeline file (paths are read from the folder the command runs in)"
    )
    assert err[1].startswith(f"ministream: error: {tmp_path / 'ok.py'}: no events to run on: give --events FILE")


RECORDED = re.compile(r"<!-- recorded: (?P<name>[\w-]+) -->\n```\w*\n(?P<body>.*?)```", re.S)


@pytest.mark.spark
def test_the_readme_example_matches_spark_as_the_tutorial_records(monkeypatch):
    """The README's pipeline file on its events, in ministream and in its compiled twin: every batch the same,
    and `compare` prints exactly what tutorials/your-own-pipeline.md recorded; the page's cluster comparison
    is the same table, and its fuzz run agreed on every script."""
    monkeypatch.chdir(ROOT)
    lesson = load_pipeline_file(EXAMPLE)
    result = compare_lesson(lesson, lesson.read_script(EVENTS))
    assert result.matches and result.rows_total == 2, result.table()
    blocks = {m["name"]: m["body"] for m in RECORDED.finditer((ROOT / "tutorials/your-own-pipeline.md").read_text())}
    status, out = run_cli("compare", "examples/my_pipeline.py", "--events", "examples/my-events.jsonl")
    assert status == 0
    assert (
        blocks["compare"] == f"$ ministream compare examples/my_pipeline.py --events examples/my-events.jsonl\n{out}"
    ), "re-record the page: .venv/bin/python tutorials/record_your_own_pipeline.py"
    assert blocks["compare-cluster"].splitlines()[1:] == blocks["compare"].splitlines()[1:]
    assert blocks["fuzz"].splitlines()[-1] == "my_pipeline: 5 of 5 random scripts match Spark batch for batch (seed 0)"


@pytest.mark.spark
def test_several_outputs_are_compared_and_fuzzed_each_against_its_own_query(monkeypatch):
    """A file of two outputs: `compare` prints a table per output, each against its own Spark query, as
    tutorials/your-own-pipeline.md records; `twin` prints both queries; a fuzz check compares both outputs
    (its batches are both queries' together)."""
    monkeypatch.chdir(ROOT)
    blocks = {m["name"]: m["body"] for m in RECORDED.finditer((ROOT / "tutorials/your-own-pipeline.md").read_text())}
    status, out = run_cli("compare", "examples/two_outputs.py", "--events", "examples/my-events.jsonl")
    assert status == 0 and out.splitlines()[-1] == "two_outputs: 2 of 2 outputs match batch for batch"
    assert (
        blocks["compare-outputs"]
        == f"$ ministream compare examples/two_outputs.py --events examples/my-events.jsonl\n{out}"
    ), "re-record the page: .venv/bin/python tutorials/record_your_own_pipeline.py"
    status, twin = run_cli("twin", "examples/two_outputs.py")
    assert status == 0 and twin.count("def twin(inputs):") == 2
    assert "# sink 'per_window': the query's output" in twin and "# sink 'big_events': the query's output" in twin
    lesson = load_pipeline_file(TWO_OUTPUTS)
    outcome = check_script(
        lesson, [[{"ts": 1_000, "key": "a", "value": 3.0}], [{"ts": 30_000, "key": "a", "value": 1.0}]]
    )
    assert outcome.matches and len(outcome.comparison.batches) == 3 + 2, outcome.describe()


@pytest.mark.spark
def test_one_outputs_state_is_compared_with_its_own_spark_query():
    """``compare --state --output NAME``: that output's rows and its state after every batch, on the events given
    with ``--events``, against the Spark query of that output alone (its state read with the state data source);
    ``state --spark --output NAME`` shows Spark's state of the same query; ``twin`` prints that query alone, and a
    fuzz check compares that output alone (the 4 batches of the windows' query)."""
    status, out = run_cli("compare", TWO_OUTPUTS, "--events", EVENTS, "--output", "per_window", "--state")
    assert status == 0, out
    assert out.splitlines()[-1] == "two_outputs, output 'per_window' state: 4 of 4 batches match; 8 of 8 rows match"
    assert "two_outputs, output 'per_window': 4 of 4 batches match; 2 of 2 rows match" in out
    status, out = run_cli("state", TWO_OUTPUTS, "--events", EVENTS, "--output", "per_window", "--spark", "--batch", 2)
    assert status == 0
    assert out.splitlines()[-3:] == [
        "  default: ('a', 1704103200000, 1704103210000) -> (2, 4.0)",
        "  default: ('a', 1704103220000, 1704103230000) -> (1, 7.0)",
        "  default: ('b', 1704103210000, 1704103220000) -> (1, 10.0)",
    ]
    status, twin = run_cli("twin", TWO_OUTPUTS, "--output", "big_events")
    assert status == 0 and twin.count("def twin(inputs):") == 1 and "# sink 'big_events': the query's output" in twin
    lesson = load_pipeline_file(TWO_OUTPUTS).of_output("per_window")
    outcome = check_script(lesson, lesson.read_script(EVENTS))
    assert outcome.matches and len(outcome.comparison.batches) == 4, outcome.describe()


@pytest.mark.spark  # compiling imports the compiler, which writes PySpark
def test_twin_prints_the_compiled_pyspark():
    """`ministream twin FILE` prints the PySpark the compiler writes for the file's plan."""
    status, out = run_cli("twin", EXAMPLE)
    assert status == 0
    assert 'watermark = events.withWatermark("ts", "5 seconds")' in out
    assert 'F.window("ts", "10 seconds")' in out
