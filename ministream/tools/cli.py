"""The ``ministream`` command: list lessons, run them, compare them with Spark, draw them.

    ministream lessons                         one line per lesson
    ministream run LESSON [--trace]            ministream's output, batch by batch
    ministream run LESSON --accounting         the same, then where every input row went (core/accounting.py)
    ministream run LESSON --crash-at N         crash after N rows, recover from the last checkpoint
        [--incremental K]                      (K delta checkpoints after each full one)
    ministream state LESSON [--batch N]        each stateful step's keyed state, per key, after each batch
        [--spark]                              (and Spark's, read with its state data source)
    ministream compare LESSON | --all          ministream against the PySpark twin, batch by batch
        [--compiled]                           (the twin compiled from the pipeline: spark/compiler)
    ministream fuzz LESSON | --all [--runs N]  ministream against Spark on random events, failures shrunk
    ministream fuzz --pipelines N [--seed S]   random pipelines against their compiled twins, failures shrunk
    ministream twin LESSON [--hand-written]    the PySpark twin compiled from the lesson's pipeline
    ministream diagrams                        render every lesson's diagrams and plots into diagrams/
    ministream cluster start|stop|status       a Spark standalone master and worker on 127.0.0.1
    ministream workshop [list|copy DIR|check|build|timings]   the notebooks: listed, copied, run headless

Where a LESSON is taken, the path of a pipeline file (``my_pipeline.py``, ``lessons/pipeline_file.py``) is
taken too. ``run`` and ``compare`` take ``--events FILE`` (the lesson on your own events, JSON Lines) and
``--param NAME=VALUE`` (change a window, a delay, a mode...). A pipeline file of several outputs runs, compares
and fuzzes each; ``--output NAME`` takes one of them, the query that feeds it alone (``run --crash-at``,
``compare --state`` and ``state --spark`` need one query). Exit status: 0 when all is well, 1 when a
comparison differs, 2 for a mistake in the command, the events or the pipeline (the message says which).
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial

import attrs
from tqdm import tqdm

from ministream.checkpoints.storage import DirectoryStorage, MemoryStorage
from ministream.core.events import EventsFileError
from ministream.core.results import format_row
from ministream.errors import PipelineError
from ministream.lessons import all_lessons, compare_lesson, get_lesson
from ministream.lessons.crash_checks import check_recovery
from ministream.lessons.state_compare import both_states, compare_state
from ministream.models.state_history import StateHistory
from ministream.operators.planner import optimizer_notes
from ministream.state.backends import BACKENDS
from ministream.time.units import TimeFormatError, format_ts
from ministream.tools import cluster
from ministream.tools.bench.report import main as bench_main
from ministream.tools.diagram import render_lessons
from ministream.tools.fuzz import fuzz_lesson
from ministream.tools.pictures import write_pictures
from ministream.tools.pipeline_fuzz import NULL_KEYS, fuzz_pipelines
from ministream.workshop.commands import main as workshop_main

EXIT_OK, EXIT_DIFFERS, EXIT_ERROR = 0, 1, 2


def _params(pairs: list[str]) -> dict:
    params = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise PipelineError(f"--param takes NAME=VALUE (for example --param delay='5 seconds'), not {pair!r}")
        params[name.strip()] = value.strip()
    return params


def _script(lesson, args, out, dead_letters: list | None = None):
    """The script of ``--events FILE`` (``None``: the lesson's own), with bad lines written to
    ``--dead-letters FILE`` when it is given instead of stopping the run (and kept in ``dead_letters``)."""
    if args.events is None:
        return None
    if not args.dead_letters:
        return lesson.read_script(args.events)
    dead_letters = [] if dead_letters is None else dead_letters
    script = lesson.read_script(args.events, dead_letters)
    _write_dead_letters(dead_letters, args, out)
    return script


def _write_dead_letters(dead_letters: list, args, out) -> None:
    """Write the bad lines of ``--events`` to ``--dead-letters FILE``, a JSON object per line, and say how many."""
    with open(args.dead_letters, "w", encoding="utf-8") as out_file:
        for letter in dead_letters:
            out_file.write(
                json.dumps({"file": letter.path, "line": letter.line, "reason": letter.reason, "text": letter.text})
                + "\n"
            )
    count = len(dead_letters)
    print(f"{count} bad line{'s' if count != 1 else ''} of {args.events} set aside in {args.dead_letters}", file=out)


def _read_both_ways(lesson, args, out) -> tuple:
    """``compare --spark-reading``: the script of ``--events`` as ministream reads it, its bad lines set aside
    (and written to ``--dead-letters FILE`` when it is given), and the script Spark's own JSON reader makes of
    the same file (``spark/permissive.py``), after a line per bad line saying what Spark reads from it."""
    if args.events is None:
        raise PipelineError("--spark-reading reads your events file as Spark would: give it with --events FILE")
    both = lesson.read_both_ways(args.events, args.master)
    if args.dead_letters:
        _write_dead_letters(both.dead_letters, args, out)
    count = len(both.readings)
    print(
        f"{count} bad line{'s' if count != 1 else ''} of {args.events}: ministream sets "
        f"{'them' if count != 1 else 'it'} aside, and Spark's JSON reader (mode PERMISSIVE) reads:",
        file=out,
    )
    for reading in both.readings:
        print(f"  {reading}", file=out)
    return both.script, both.spark_script


def _lesson(args):
    """The lesson or pipeline file a command names; with ``--output NAME``, that one output of it: the query
    that feeds it, alone, with its own twin (``Lesson.of_output``)."""
    lesson = get_lesson(args.lesson)
    return lesson if args.output is None else lesson.of_output(args.output)


def _one_output(lesson, option: str, what: str) -> None:
    """Refuse ``option`` on a pipeline of several outputs, where it needs one query: name them, and the way
    to choose one."""
    if len(lesson.outputs) > 1:
        raise PipelineError(
            f"{option} {what} one query, and {lesson.name} has {len(lesson.outputs)} outputs, a query each "
            f"({', '.join(lesson.outputs)}): choose one with --output NAME"
        )


def cmd_lessons(args, out) -> int:

    lessons = all_lessons()
    width = max(len(lesson.name) for lesson in lessons)
    for lesson in lessons:
        print(f"{lesson.name.ljust(width)}  {lesson.title}", file=out)
    return EXIT_OK


def print_batches(batches, out) -> None:
    """ministream's output as text: one block per batch, one line per row (rows sorted for reading)."""
    for batch in batches:
        mark = f"watermark {format_ts(batch.watermark)}" if batch.watermark is not None else "no watermark"
        print(f"batch {batch.batch_id} ({mark}): {len(batch.rows)} row{'s' if len(batch.rows) != 1 else ''}", file=out)
        for row in sorted(batch.rows, key=lambda row: [repr(value) for value in row.values()]):
            print(f"  {format_row(row)}", file=out)


def print_arrivals(run, out, sink: str = "output") -> None:
    """A continuous run's output as text: no batches, so every row in the order it reached the sink, with
    the sink's watermark at that moment, then the final watermark."""
    arrivals = run.arrivals_at(sink)
    print(
        f"continuous model (no batches): {len(arrivals)} row{'s' if len(arrivals) != 1 else ''} in arrival "
        "order, each with the watermark at the sink when it arrived",
        file=out,
    )
    width = max((len(format_ts(arrival.watermark)) for arrival in arrivals), default=0)
    for arrival in arrivals:
        print(f"  watermark {format_ts(arrival.watermark).ljust(width)}  {format_row(arrival.row)}", file=out)
    print(f"final watermark: {format_ts(run.output(sink)[0].watermark)}", file=out)


def cmd_run(args, out) -> int:

    lesson = _lesson(args)
    params = _params(args.param)
    if args.crash_at is not None:
        return _run_with_crash(lesson, args, params, out)
    alone = [
        flag
        for flag, value in (
            ("--restore-parallelism", args.restore_parallelism),
            ("--checkpoint-dir", args.checkpoint_dir),
            ("--incremental", args.incremental),
        )
        if value is not None
    ]
    if alone:
        raise PipelineError(f"{alone[0]} only applies to a run that crashes and recovers: add --crash-at N")
    dead_letters = []
    run = lesson.run(
        _script(lesson, args, out, dead_letters),
        params,
        parallelism=args.parallelism,
        seed=args.seed,
        trace=args.trace,
        model=args.model,
        state_backend=args.state_backend,
    )
    values = lesson.resolve_params(params)
    print(f"{lesson.name}: {lesson.title}", file=out)
    shown = ", ".join(f"{p.name}={p.show(values[p.name])}" for p in lesson.params)
    if shown:
        print(f"parameters: {shown}", file=out)
    # one job (one output, or the continuous model, which runs several as one, as Flink does): one trace and
    # one account; a micro-batch pipeline of several outputs: a query each, each its own block
    one_job = len(lesson.outputs) == 1 or all(run.query(output) is run for output in lesson.outputs)
    if args.trace and one_job:
        print(run.trace.format(), file=out)
        print("output:", file=out)
    for output in lesson.outputs:
        query = run if one_job else run.query(output)
        if len(lesson.outputs) > 1 or args.output is not None:
            print(f"output {output!r}{'' if one_job and args.output is None else ' (its own query)'}:", file=out)
        if args.trace and not one_job:
            print(query.trace.format(), file=out)
            print("output:", file=out)
        if args.model == "continuous":
            print_arrivals(run, out, output)
        else:
            print_batches(run.output(output), out)
        if args.accounting and not one_job:
            print_accounting(query, args.events, dead_letters, out)
    if args.accounting and one_job:
        print_accounting(run, args.events, dead_letters, out)
    return EXIT_OK


def print_accounting(run, events_file, dead_letters: list, out) -> None:
    """Where every input row went (``core/accounting.py``): read, dead-lettered, and step by step."""
    if not hasattr(run, "accounting"):  # a recovered run: its attempts read some rows twice
        print(
            "accounting: not available for a run that crashes and recovers (each attempt reads the rows "
            "after its checkpoint again)",
            file=out,
        )
        return
    print(f"accounting: {run.accounting(events_file, dead_letters).format()}", file=out)


def _run_with_crash(lesson, args, params, out) -> int:
    """``run --crash-at N``: crash after N rows, recover from the last complete checkpoint (``lessons/crash_checks.py``),
    print the recovered output and say whether it equals the output of the run without a crash."""

    _one_output(lesson, "--crash-at", "crashes and recovers")
    storage = DirectoryStorage(args.checkpoint_dir) if args.checkpoint_dir else MemoryStorage()
    if storage.checkpoint_ids():
        raise PipelineError(
            f"--checkpoint-dir {args.checkpoint_dir} holds checkpoints of an earlier run: give an empty or new folder"
        )
    run, _, same = check_recovery(
        lesson,
        _script(lesson, args, out),
        params,
        crash_after_rows=args.crash_at,
        model=args.model,
        parallelism=args.parallelism,
        seed=args.seed,
        restore_parallelism=args.restore_parallelism,
        storage=storage,
        trace=args.trace,
        incremental=args.incremental,
    )
    print(f"{lesson.name}: {lesson.title}", file=out)
    for attempt in run.attempts:
        start = "from the beginning" if attempt.restored_from is None else f"from checkpoint {attempt.restored_from}"
        end = f"crashed: {attempt.crash}" if attempt.crash else "ran to the end"
        print(f"attempt at parallelism {attempt.parallelism}, {start}: {end}", file=out)
    for problem in run.problems:
        print(problem, file=out)
    if args.trace:
        print(run.trace.format(), file=out)
    print("recovered output:" if args.output is None else f"recovered output {args.output!r}:", file=out)
    print_batches(run.output(lesson.outputs[0]), out)
    print(
        f"{lesson.name}: the recovered output {'equals' if same else 'DIFFERS FROM'} the output of the run "
        "without a crash",
        file=out,
    )
    return EXIT_OK if same else EXIT_DIFFERS


def cmd_compare(args, out) -> int:

    if args.all == bool(args.lesson):
        raise PipelineError("give a lesson name or --all")
    params = _params(args.param)
    if args.lesson:
        lesson = _lesson(args)
        if args.compiled:
            lesson = _with_compiled_twin(lesson, params)
        if args.state:
            _one_output(lesson, "--state", "compares the state of")
        twin_script = None
        if args.spark_reading:
            script, twin_script = _read_both_ways(lesson, args, out)
        else:
            script = _script(lesson, args, out)
        twin = "the twin compiled from its pipeline" if args.compiled else "Spark"
        if args.spark_reading:
            twin += " on what Spark's JSON reader makes of every line"
        results = []
        for output in lesson.outputs:  # a pipeline file may have several outputs: each its own query in Spark
            result = compare_lesson(
                lesson,
                script,
                params,
                parallelism=args.parallelism,
                master=args.master,
                output=output,
                twin_script=twin_script,
            )
            results.append(result)
            named = f"{lesson.name}, output {output!r}" if len(lesson.outputs) > 1 or args.output else lesson.name
            print(f"{named}: ministream against {twin}, batch by batch", file=out)
            if output == lesson.outputs[0]:
                for note in optimizer_lines(lesson, script, params):
                    print(note, file=out)
            print(result.table(), file=out)
            print(f"{named}: {result.summary()}", file=out)
        if len(results) > 1:
            agreed = sum(result.matches for result in results)
            print(f"{lesson.name}: {agreed} of {len(results)} outputs match batch for batch", file=out)
        if args.state:
            state = compare_state(lesson, params, master=args.master, script=script)
            print(f"{named}: the state after every batch, ministream against Spark's state data source", file=out)
            print(state.table(), file=out)
            print(f"{named} state: {state.summary()}", file=out)
            return EXIT_OK if result.matches and state.matches else EXIT_DIFFERS
        return EXIT_OK if all(result.matches for result in results) else EXIT_DIFFERS
    lessons = all_lessons()
    if args.compiled or args.spark_reading:
        flag = "--compiled" if args.compiled else "--spark-reading"
        raise PipelineError(f"{flag} compares one lesson: give its name")
    if args.output:
        raise PipelineError("--output chooses an output of one pipeline file: give its path, not --all")
    header = ("lesson", "batches matched", "rows matched", "result")
    widths = [max(len(header[0]), *(len(lesson.name) for lesson in lessons)), len(header[1]), len(header[2])]

    def line(cells) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, [*widths, 0])).rstrip()

    print(f"every lesson in ministream and in Spark, a line as each one finishes ({len(lessons)} lessons)", file=out)
    print(line(header), file=out, flush=True)
    differing = []
    for lesson in lessons:
        if lesson.twin is None:  # a concept Spark does not have (operator state): checked by properties instead
            print(line((lesson.name, "-", "-", "no Spark twin")), file=out, flush=True)
            continue
        result = compare_lesson(lesson, None, params, parallelism=args.parallelism, master=args.master)
        if not result.matches:
            differing.append((lesson, result))
        batches = f"{result.batches_matched}/{len(result.batches)}"
        rows = f"{result.rows_matched}/{result.rows_total}"
        print(line((lesson.name, batches, rows, "match" if result.matches else "DIFFERS")), file=out, flush=True)
    for lesson, result in differing:
        print(f"{lesson.name} differs:\n{result.table()}", file=out)
    twins = [lesson for lesson in lessons if lesson.twin is not None]
    print(f"{len(twins) - len(differing)} of {len(twins)} lessons match Spark batch for batch", file=out)
    return EXIT_DIFFERS if differing else EXIT_OK


def optimizer_lines(lesson, script, params: dict) -> list[str]:
    """What Spark's optimizer changes in the lesson's pipeline, a line per change, which ministream follows
    (``planner.optimizer_notes``): a removed join, an event time pruned so that no row is late there.

    >>> optimizer_lines(get_lesson("outer-join"), None, {"window": "max"})
    ["Spark's optimizer, followed by ministream: step 'join': removed by Spark (EliminateOuterJoin): passes on the left rows"]
    >>> optimizer_lines(get_lesson("deduplication"), None, {"keep": "id"})
    ["Spark's optimizer, followed by ministream: step 'dedup': no late rows: Spark prunes ts (nothing reads it)"]
    """
    flow = lesson.pipeline(lesson.default_script if script is None else script, lesson.resolve_params(params))
    return [
        f"Spark's optimizer, followed by ministream: step {step.name!r}: {note}"
        for step in flow.steps
        for note in optimizer_notes(flow, step)
    ]


def _with_compiled_twin(lesson, params: dict):
    """The lesson with the twin (and Spark settings) compiled from its pipeline instead of its own (a pipeline
    file's twin is compiled already)."""
    from ministream.spark.compiler import compiled_lesson_twin

    if lesson.twin_source is not None:
        return lesson
    compiled = compiled_lesson_twin(lesson, params)
    return attrs.evolve(lesson, twin=compiled.twin, spark_conf=compiled.conf)


def cmd_twin(args, out) -> int:
    """Print the PySpark source the compiler writes for a lesson's pipeline (``spark/compiler``), or the
    lesson's hand-written twin; a pipeline file's twin is the compiled one (it has no other)."""
    from ministream.spark.compiler import compiled_lesson_twin

    lesson = _lesson(args)
    if lesson.twin_source is not None:
        if args.hand_written or args.param:
            raise PipelineError(
                f"{args.lesson} is a pipeline file: its twin is compiled from its plan, and it has no parameters"
            )
        for index, output in enumerate(lesson.outputs):  # several outputs: a query each, one after the other
            print("\n" if index else "", lesson.of_output(output).twin_code(), file=out, sep="", end="")
        return EXIT_OK
    if args.hand_written:
        print(lesson.twin_code(), file=out, end="")
        return EXIT_OK
    compiled = compiled_lesson_twin(lesson, _params(args.param))
    print(compiled.source, file=out, end="")
    return EXIT_OK


def cmd_fuzz(args, out) -> int:

    if args.pipelines is not None:
        return _fuzz_pipelines(args, out)
    if args.all == bool(args.lesson):
        raise PipelineError("give a lesson name, a pipeline file, --all or --pipelines N")
    if args.all and args.param:
        raise PipelineError("--param changes one lesson's parameters: give a lesson name, not --all")
    if args.all and args.output:
        raise PipelineError("--output chooses an output of one pipeline file: give its path, not --all")
    lessons = all_lessons() if args.all else [_lesson(args)]
    params = _params(args.param)
    failures = 0
    twins = [lesson for lesson in lessons if lesson.twin is not None]
    # A bar on stderr counts the scripts; each script's line and each lesson's summary print above it, on out.
    with tqdm(total=args.runs * len(twins), desc="fuzz", unit="script", file=sys.stderr) as bar:

        def log(lesson, line: str) -> None:
            bar.write(f"{lesson.name} {line}", file=out)
            bar.update(1)

        for lesson in lessons:
            if lesson.twin is None:
                bar.write(f"{lesson.name}: no Spark twin, nothing to compare", file=out)
                continue
            bar.set_description(f"fuzz {lesson.name}")
            report = fuzz_lesson(
                lesson,
                args.runs,
                args.seed,
                params if not args.all else None,
                out_dir=args.out,
                shrink_budget=args.shrink_budget or 20,
                parallelism=args.parallelism,
                log=partial(log, lesson),
            )
            failures += not report.matches
            bar.write(report.summary(), file=out)
    return EXIT_DIFFERS if failures else EXIT_OK


def _fuzz_pipelines(args, out) -> int:
    """``fuzz --pipelines N``: random pipelines against their compiled twins (``tools/pipeline_fuzz.py``)."""
    if args.lesson or args.all or args.param or args.output:
        raise PipelineError("--pipelines draws its own pipelines: give no lesson, --all, --param or --output with it")
    if args.pipelines < 1 or args.scripts < 1:
        raise PipelineError("--pipelines and --scripts take a whole number from 1")
    if not 0 <= args.null_keys <= 1:
        raise PipelineError(f"--null-keys takes a share from 0 to 1, not {args.null_keys}")
    # A bar on stderr counts the scripts; each script's line and the summary print above it, on out.
    with tqdm(total=args.pipelines * args.scripts, desc="fuzz pipelines", unit="script", file=sys.stderr) as bar:

        def log(line: str) -> None:
            bar.write(line, file=out)
            bar.update(1)  # every line is one script's

        report = fuzz_pipelines(
            args.pipelines,
            args.seed,
            args.scripts,
            out_dir=args.out,
            shrink_budget=args.shrink_budget or 40,
            log=log,
            null_keys=args.null_keys,
        )
        bar.write(report.summary(), file=out)
    return EXIT_OK if report.matches else EXIT_DIFFERS


def cmd_diagrams(args, out) -> int:

    for path in render_lessons(args.out) + write_pictures(args.out):
        print(f"wrote {path}", file=out)
    return EXIT_OK


def cmd_cluster(args, out) -> int:
    import time

    if args.action == "start":
        began = time.monotonic()
        started = cluster.start_cluster(
            args.run_dir,
            port=args.port,
            web_ui_port=args.web_ui_port,
            worker_web_ui_port=args.worker_web_ui_port,
            timeout=args.timeout,
        )
        print(
            f"master {started.master_url} (web UI {started.web_ui_url}), 1 worker registered, "
            f"in {time.monotonic() - began:.1f} s; logs in {args.run_dir}",
            file=out,
        )
        print(f"next: ministream compare --all --master {started.master_url}", file=out)
    elif args.action == "stop":
        stopped = cluster.stop_cluster(args.run_dir)
        print(f"stopped pids {', '.join(map(str, stopped))}" if stopped else "no cluster was running", file=out)
    else:
        print(cluster.cluster_status(args.run_dir).describe(), file=out)
    return EXIT_OK


def cmd_state(args, out) -> int:
    """``ministream state LESSON [--batch N] [--spark]``: each stateful step's keyed state, per key, after batch N
    (every batch when N is not given), with the state on the backend asked for; with ``--spark``, also the twin's
    state after the same batches, read with Spark's state data source and laid out as the state diff maps it."""
    lesson = _lesson(args)
    if args.spark:
        _one_output(lesson, "--spark", "reads the state of")
    history = StateHistory()
    script = _script(lesson, args, out)
    lesson.run(
        script,
        _params(args.param),
        parallelism=args.parallelism,
        state_backend=args.state_backend,
        after_batch=history,
    )
    batches = sorted(history.batches) if args.batch is None else [args.batch]
    if args.batch is not None and args.batch not in history.batches:
        raise PipelineError(f"lesson {lesson.name!r} ran batches {sorted(history.batches)}, not batch {args.batch}")
    print(f"{lesson.name}: keyed state in {args.state_backend}, after each batch", file=out)
    for batch_id in batches:
        print(history.describe(batch_id), file=out)
    if args.spark:
        _, theirs = both_states(lesson, _params(args.param), script=script)  # Spark's side of the diff
        spark = {batch.batch_id: batch.rows for batch in theirs}
        print(
            f"{lesson.name}: Spark's state data source, as the state diff maps it (lessons/state_compare.py)", file=out
        )
        for batch_id in batches:
            print(f"after batch {batch_id}", file=out)
            for row in sorted(spark.get(batch_id, []), key=lambda row: (row["store"], repr(row["key"]))):
                print(f"  {row['store']}: {row['key']!r} -> {row['value']!r}", file=out)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    summary = __doc__.split("\n\n")[0].replace("``", "")  # the docstring's reST quotes are not for a terminal
    parser = argparse.ArgumentParser(prog="ministream", description=summary)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("lessons", help="list the lessons").set_defaults(handler=cmd_lessons)

    def lesson_options(command, lesson_required=True):
        command.add_argument("lesson", nargs=None if lesson_required else "?", help="a lesson name or a pipeline file")
        command.add_argument("--events", metavar="FILE", help="run on your own events (JSON Lines)")
        command.add_argument(
            "--dead-letters",
            metavar="FILE",
            help="set bad lines of --events aside in FILE (JSON Lines) instead of stopping",
        )
        command.add_argument("--param", action="append", metavar="NAME=VALUE", help="change a parameter")
        command.add_argument("--parallelism", type=int, default=1, help="subtasks per keyed step")
        output_option(command)

    def output_option(command):
        command.add_argument(
            "--output", metavar="NAME", help="one output of a pipeline file of several: the query that feeds it, alone"
        )

    run = commands.add_parser("run", help="run a lesson in ministream and print its batches")
    lesson_options(run)
    run.add_argument("--seed", type=int, default=0, help="the scheduler's seed")
    run.add_argument("--trace", action="store_true", help="explain every row emitted or dropped")
    run.add_argument(
        "--accounting",
        action="store_true",
        help="then say where every input row went: dead-lettered, and per step kept, late or dropped",
    )
    run.add_argument("--model", choices=("microbatch", "continuous"), default="microbatch")
    run.add_argument("--state-backend", choices=BACKENDS, default="memory", help="where keyed state lives")
    run.add_argument(
        "--crash-at",
        type=int,
        metavar="N",
        help="crash after N rows of the script, recover from "
        "the last complete checkpoint, and check the output against a run without a crash",
    )
    run.add_argument("--restore-parallelism", type=int, help="with --crash-at: the parallelism to recover with")
    run.add_argument(
        "--checkpoint-dir", metavar="DIR", help="with --crash-at: keep checkpoints in DIR (default: in memory)"
    )
    run.add_argument(
        "--incremental",
        type=int,
        metavar="K",
        help="with --crash-at: after each full checkpoint, "
        "up to K incremental ones (the keys changed since the previous checkpoint)",
    )
    run.set_defaults(handler=cmd_run)

    state = commands.add_parser("state", help="print each stateful step's keyed state, per key, after batch N")
    lesson_options(state)
    state.add_argument("--batch", type=int, metavar="N", help="the batch after which to show it (default: every one)")
    state.add_argument("--state-backend", choices=BACKENDS, default="memory", help="where keyed state lives")
    state.add_argument(
        "--spark", action="store_true", help="also read Spark's state after the same batches (its state data source)"
    )
    state.set_defaults(handler=cmd_state)

    compare = commands.add_parser("compare", help="run a lesson in ministream and in Spark, and compare")
    lesson_options(compare, lesson_required=False)
    compare.add_argument("--all", action="store_true", help="every lesson, with a summary table")
    compare.add_argument("--master", help="a Spark master URL (default: a local session)")
    compare.add_argument(
        "--state", action="store_true", help="also diff the state after every batch (lessons/state_compare.py)"
    )
    compare.add_argument(
        "--compiled", action="store_true", help="use the twin compiled from the pipeline (ministream twin LESSON)"
    )
    compare.add_argument(
        "--spark-reading",
        action="store_true",
        help="run the twin on what Spark's JSON reader makes of --events, bad lines included, and show each",
    )
    compare.set_defaults(handler=cmd_compare)

    twin = commands.add_parser("twin", help="print the PySpark twin compiled from a lesson's pipeline")
    twin.add_argument("lesson", help="a lesson name or a pipeline file")
    twin.add_argument("--param", action="append", metavar="NAME=VALUE", help="change a parameter")
    twin.add_argument("--hand-written", action="store_true", help="print the lesson's hand-written twin instead")
    output_option(twin)
    twin.set_defaults(handler=cmd_twin)

    fuzz = commands.add_parser("fuzz", help="compare ministream with Spark on random events; shrink what differs")
    fuzz.add_argument("lesson", nargs="?", help="a lesson name or a pipeline file")
    fuzz.add_argument("--param", action="append", metavar="NAME=VALUE", help="change a parameter")
    fuzz.add_argument("--parallelism", type=int, default=1, help="subtasks per keyed step")
    fuzz.add_argument("--all", action="store_true", help="every lesson that has a twin")
    output_option(fuzz)
    fuzz.add_argument("--runs", type=int, default=10, help="random scripts per lesson")
    fuzz.add_argument(
        "--pipelines", type=int, metavar="N", help="N random pipelines against their compiled twins (no lesson)"
    )
    fuzz.add_argument("--scripts", type=int, default=3, help="with --pipelines: random scripts per pipeline")
    fuzz.add_argument(
        "--null-keys",
        type=float,
        default=NULL_KEYS,
        help=f"with --pipelines: the share of null keys in the scripts (default {NULL_KEYS})",
    )
    fuzz.add_argument("--seed", type=int, default=0, help="which random scripts")
    fuzz.add_argument("--out", default="fuzz-failures", help="where failing scripts are written as events files")
    fuzz.add_argument(
        "--shrink-budget",
        type=int,
        help="runs of both engines to shrink a failure (default 20; with --pipelines, 40: the plan shrinks too)",
    )
    fuzz.set_defaults(handler=cmd_fuzz)

    # listed for --help only: main() hands `bench` and its own options to tools/bench/report.py before parsing
    commands.add_parser("bench", help="benchmarks: events/s against a plain loop and Spark (ministream.tools.bench)")

    diagrams = commands.add_parser(
        "diagrams", help="render every lesson's diagrams (SVG) and its tutorial's plots (PNG)"
    )
    diagrams.add_argument("--out", default="diagrams", help="the folder to write to")
    diagrams.set_defaults(handler=cmd_diagrams)

    # listed for --help only: main() hands `workshop` and its arguments to ministream/workshop/commands.py
    commands.add_parser(
        "workshop", help="the workshop's notebooks: list, copy DIR, check, build, timings (ministream.workshop)"
    )

    cluster = commands.add_parser("cluster", help="start, stop or show a Spark standalone cluster on 127.0.0.1")
    cluster.add_argument("action", choices=("start", "stop", "status"))
    cluster.add_argument("--run-dir", default=".cluster", help="logs and pid files (default .cluster)")
    cluster.add_argument("--port", type=int, default=7077, help="the master's port (0: any free port)")
    cluster.add_argument("--web-ui-port", type=int, default=8080, help="the master's web UI (0: any free port)")
    cluster.add_argument("--worker-web-ui-port", type=int, default=8081, help="the worker's web UI (0: any)")
    cluster.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the worker")
    cluster.set_defaults(handler=cmd_cluster)
    return parser


def main(argv: list[str] | None = None, out=None) -> int:
    """Run the command line; returns the exit status (the console script exits with it)."""
    from ministream.spark.session import report_progress  # no PySpark needed until a session starts

    out = out or sys.stdout
    argv = sys.argv[1:] if argv is None else list(argv)
    report_progress(sys.stderr)  # "starting Spark (about 10 s)", a planned crash in one line...
    try:
        if argv[:1] == ["bench"]:  # its options are its own (ministream.tools.bench.main)
            return bench_main(argv[1:], out)
        if argv[:1] == ["workshop"]:  # its subcommands are its own (ministream.workshop.commands)
            return workshop_main(argv[1:], out, prog="ministream workshop")
        args = build_parser().parse_args(argv)
        return args.handler(args, out)
    except (PipelineError, EventsFileError, TimeFormatError) as error:
        for line in str(error).splitlines():  # several bad lines of an events file: one line each
            print(f"ministream: error: {line}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as error:  # Spark's failures, in the user's terms
        if type(error).__name__ in ("SparkQueryError", "SparkUnavailableError", "ClusterError"):
            print(f"ministream: Spark error: {error}", file=sys.stderr)
            return EXIT_ERROR
        raise
    finally:
        report_progress(None)


if __name__ == "__main__":
    sys.exit(main())
