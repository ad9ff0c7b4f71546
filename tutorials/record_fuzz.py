"""Re-record the tables of fuzz results in tutorials/differential-testing.md by running the fuzzer for real.

For every lesson with a Spark twin, one after the other (Spark runs are never run side by side on this
machine), this runs ``ministream fuzz LESSON --runs N --seed S`` in a fresh process, exactly as a reader types
it, times it, and reads its last line ("LESSON: A of N random scripts match Spark batch for batch"); then the
same with the other settings of the lessons that teach a choice (``VARIANTS``, fewer scripts each). The
commands run in a copy of the last commit (``git archive HEAD``), so that work in progress in the tree cannot
change what is recorded. Failing scripts, if any, are copied to ``tests/data/fuzz/<lesson and parameters>/``
and the page names the command that replays each. ``tests/tools/test_fuzz.py`` checks the first table (every
lesson, 20 scripts, a replay per disagreement).

    .venv/bin/python tutorials/record_fuzz.py                    # both tables: about 70 minutes on 2 cores
    .venv/bin/python tutorials/record_fuzz.py --part variants    # the second table only
    .venv/bin/python tutorials/record_fuzz.py --part pipelines --pipelines 200 --scripts 3   # random pipelines

``--part pipelines`` runs ``ministream fuzz --pipelines N --scripts K --seed S`` (random plans against their
compiled twins) and writes its results, by kind of plan, between the page's ``<!-- fuzz pipelines -->``
markers; its full output is kept in ``tests/data/fuzz/pipelines/output.txt``, with the shrunk disagreements.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record_cluster import ENV, snapshot  # the same run environment, and a copy of the last commit

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "tutorials" / "differential-testing.md"
FAILURES = ROOT / "tests" / "data" / "fuzz"
BLOCK = r"(<!-- fuzz {name} -->\n)(?P<body>.*?)(<!-- /fuzz {name} -->)"
SECOND_OUTPUT = re.compile(r"; a second output(?: of the \w+ rows)?: ")
SUMMARY = re.compile(r"^(?P<lesson>[\w-]+): (?P<agreed>\d+) of (?P<runs>\d+) random scripts match Spark", re.M)

VARIANTS = [
    ("running-aggregation", {"mode": "complete"}),
    ("session-window", {"mode": "complete"}),
    ("output-modes", {"mode": "update"}),
    ("output-modes", {"mode": "complete"}),
    ("outer-join", {"how": "full_outer"}),
    ("outer-join", {"how": "left_semi"}),
    ("idle-input", {"policy": "max"}),
    ("deduplication", {"key": "within"}),
    ("checkpoint-recovery", {"delivery": "at_least_once"}),
]
"""Other settings of the lessons that teach a choice (a second table, fewer scripts each)."""


def lessons_with_a_twin(copy: Path) -> list[str]:
    code = "from ministream.lessons import all_lessons; print(*[l.name for l in all_lessons() if l.twin])"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=copy, env=ENV, capture_output=True, text=True, check=True
    ).stdout.split()


def fuzz(copy: Path, lesson: str, params: dict, runs: int, seed: int) -> dict:
    """One ``ministream fuzz`` process: its lesson, runs, agreements and wall-clock seconds; failing scripts go
    to ``fuzz-failures/<lesson and params>/`` and are copied to ``tests/data/fuzz/``."""
    slug = "-".join([lesson] + [f"{name}={value}" for name, value in params.items()])
    words = ["ministream", "fuzz", lesson, "--runs", str(runs), "--seed", str(seed), "--out", f"fuzz-failures/{slug}"]
    for name, value in params.items():
        words += ["--param", f"{name}={value}"]
    began = time.monotonic()
    done = subprocess.run(words, cwd=copy, env=ENV, capture_output=True, check=False, text=True)
    seconds = time.monotonic() - began
    found = SUMMARY.search(done.stdout)
    if found is None:
        raise RuntimeError(
            f"{' '.join(words)} printed no summary (exit {done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}"
        )
    if (copy / "fuzz-failures" / slug).exists():
        shutil.copytree(copy / "fuzz-failures" / slug, FAILURES / slug, dirs_exist_ok=True)
    replays = [
        line.strip().replace("fuzz-failures/", "tests/data/fuzz/")
        for line in done.stdout.splitlines()
        if line.strip().startswith("replay:")
    ]
    return {
        "lesson": lesson,
        "params": params,
        "runs": int(found["runs"]),
        "agreed": int(found["agreed"]),
        "seconds": seconds,
        "replays": replays,
    }


def table(results: list[dict], commit: str, seed: int, began: str, loads: tuple) -> str:
    """The recorded results as Markdown: a sentence on how, the table, the total, the replay of each failure."""
    runs = results[0]["runs"] if results else 0
    with_params = any(r["params"] for r in results)
    command = "ministream fuzz LESSON --param NAME=VALUE" if with_params else "ministream fuzz LESSON"
    lines = [
        (
            f"Recorded on {began} (UTC) from commit `{commit}`: `{command} --runs {runs} --seed {seed}` for "
            "each row, one at a time, each in a fresh process on a copy of that commit "
            "(`tutorials/record_fuzz.py` does all of it), on 2 cores shared with other work (load average "
            f"{loads[0]} before, {loads[1]} after). Seconds are the wall-clock time of the whole process: "
            "starting Spark (about 20 s), every script in both engines, and shrinking a disagreement."
        ),
        "",
    ]
    if with_params:
        lines += ["| lesson | parameters | runs | agreed | seconds |", "| --- | --- | ---: | ---: | ---: |"]
        lines += [
            f"| `{r['lesson']}` | `{' '.join(f'{n}={v}' for n, v in r['params'].items())}` | {r['runs']} | "
            f"{r['agreed']} | {r['seconds']:.0f} |"
            for r in results
        ]
    else:
        lines += ["| lesson | runs | agreed | seconds |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| `{r['lesson']}` | {r['runs']} | {r['agreed']} | {r['seconds']:.0f} |" for r in results]
    total = sum(r["seconds"] for r in results)
    lines += [
        "",
        (
            f"{sum(r['agreed'] for r in results)} of {sum(r['runs'] for r in results)} random scripts agree, "
            f"in {total / 60:.0f} minutes."
        ),
    ]
    for r in results:
        lines += [f"- `{r['lesson']}`: {replay}" for replay in r["replays"]]
    return "\n".join(lines) + "\n"


def write_block(name: str, text: str) -> None:
    """Put ``text`` between the page's ``<!-- fuzz NAME -->`` markers."""
    block = re.compile(BLOCK.format(name=name), re.S)
    PAGE.write_text(block.sub(lambda m: m.group(1) + text + m.group(3), PAGE.read_text()))


PIPELINE = re.compile(r"^pipeline (?P<index>\d+): A random pipeline: (?P<plan>.*)$")
SCRIPT = re.compile(r"^(?:pipeline (?P<index>\d+) |  )script \d+: \d+ batches, \d+ rows: (?P<outcome>.*)$")
AGREES = re.compile(r"^(\d+) of \1 batches match; (\d+) of \2 rows match$")


def plan_kind(plan: str) -> str:
    """The stateful steps of a plan's description, in a few words and in the plan's order: ``dedup, then sliding
    windows``, ``join, then tumbling windows``, ``join, then session windows (right columns)``; a plan of two
    outputs is its first output's kind, ``and a second output``.

    >>> plan_kind("aggregate per key; a second output: tumbling 5 seconds windows per key (update mode).")
    'aggregate, and a second output'
    >>> plan_kind("inner join on key within [0, 1000] ms; a second output of the left rows: session 2 seconds "
    ...           "windows per key (append mode, min watermark policy).")
    'join, and a second output'
    """
    if second := SECOND_OUTPUT.search(plan):  # "; a second output: ..." or "; a second output of the left rows: ..."
        return f"{plan_kind(plan[: second.start()])}, and a second output"
    found = [
        (plan.index(word), kind)
        for kind, word in (
            ("dedup", "dedup by"),
            ("aggregate", "aggregate"),
            ("tumbling windows", "tumbling"),
            ("sliding windows", "sliding"),
            ("session windows", "session"),
            ("join", "join on key"),
            ("process function", "process"),  # "process: ..." or, before a join, "process on left: ..." (or right)
        )
        if word in plan
    ]
    steps = [kind for _, kind in sorted(found)]
    if "join" in steps and "dedup" in steps:
        return "dedup on each side, then join"
    side = " (right columns)" if "(right columns)" in plan else ""
    return ", then ".join(steps) + side


def pipelines_table(stdout: str) -> tuple[list[tuple], str]:
    """Per kind of plan: pipelines, scripts, scripts that agree; and the run's last line (its summary)."""
    kinds: dict[int, str] = {}
    rows: dict[str, list[int]] = {}
    current = None
    for line in stdout.splitlines():
        if found := PIPELINE.match(line):
            current = int(found["index"])
            kinds[current] = plan_kind(found["plan"])
            rows.setdefault(kinds[current], [0, 0, 0])[0] += 1
        elif (found := SCRIPT.match(line)) and found["outcome"] != "not compared":
            index = int(found["index"]) if found["index"] else current
            counts = rows[kinds[index]]
            counts[1] += 1
            counts[2] += bool(AGREES.match(found["outcome"]))
    summary = [line for line in stdout.splitlines() if "random pipelines agree" in line]
    return sorted((kind, *counts) for kind, counts in rows.items()), summary[-1] if summary else ""


def fuzz_pipelines(copy: Path, commit: str, count: int, scripts: int, seed: int) -> str:
    """Run ``ministream fuzz --pipelines`` in the snapshot; return the page's block."""
    words = ["ministream", "fuzz", "--pipelines", str(count), "--scripts", str(scripts), "--seed", str(seed)]
    words += ["--out", "fuzz-failures/pipelines"]
    began, before, clock = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M"), os.getloadavg()[0], time.monotonic()
    saved = FAILURES / "pipelines"
    saved.mkdir(parents=True, exist_ok=True)
    with open(saved / "output.txt", "w") as output:  # written as it runs, so that a long run can be watched
        done = subprocess.run(words, cwd=copy, env=ENV, stdout=output, stderr=subprocess.PIPE, check=False, text=True)
    seconds = time.monotonic() - clock
    stdout = (saved / "output.txt").read_text()
    table, summary = pipelines_table(stdout)
    if not summary:
        raise RuntimeError(f"{' '.join(words)} printed no summary (exit {done.returncode}):\n{done.stderr[-3000:]}")
    if (copy / "fuzz-failures" / "pipelines").exists():
        shutil.copytree(copy / "fuzz-failures" / "pipelines", saved, dirs_exist_ok=True)
    lines = [
        (
            f"Recorded on {began} (UTC) from commit `{commit}`: `{' '.join(words[:-2])}` in a fresh process on a copy "
            f"of that commit (`tutorials/record_fuzz.py --part pipelines`), on 2 cores shared with other work (load "
            f"average {before:.1f} before, {os.getloadavg()[0]:.1f} after), in {seconds / 60:.0f} minutes. Its "
            "whole output: `tests/data/fuzz/pipelines/output.txt`."
        ),
        "",
        "| stateful steps | pipelines | scripts | agreed |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [f"| {kind} | {pipelines} | {total} | {agreed} |" for kind, pipelines, total, agreed in table]
    lines += ["", f"`{summary}`"]
    lines += [
        f"- {line.strip().replace('fuzz-failures/', 'tests/data/fuzz/')}"
        for line in stdout.splitlines()
        if line.strip().startswith("replay:")
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="scripts per lesson (first table)")
    parser.add_argument("--variant-runs", type=int, default=10, help="scripts per variant (second table)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part", choices=("lessons", "variants", "all", "pipelines"), default="all")
    parser.add_argument("--pipelines", type=int, default=200, help="random pipelines (--part pipelines)")
    parser.add_argument("--scripts", type=int, default=3, help="random scripts per pipeline (--part pipelines)")
    args = parser.parse_args(argv)
    if args.part == "pipelines":
        with tempfile.TemporaryDirectory(prefix="ministream-fuzz-") as folder:
            commit = snapshot(Path(folder))
            write_block("pipelines", fuzz_pipelines(Path(folder), commit, args.pipelines, args.scripts, args.seed))
        print(f"wrote the pipelines table of {PAGE}")
        return 0
    with tempfile.TemporaryDirectory(prefix="ministream-fuzz-") as folder:
        copy = Path(folder)
        commit = snapshot(copy)
        parts = {"lessons": [(lesson, {}) for lesson in lessons_with_a_twin(copy)], "variants": VARIANTS}
        for part in ("lessons", "variants"):
            if args.part not in (part, "all"):
                continue
            began = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M")
            before, results = os.getloadavg()[0], []
            for lesson, params in parts[part]:
                results.append(
                    fuzz(copy, lesson, params, args.runs if part == "lessons" else args.variant_runs, args.seed)
                )
                print(
                    f"{lesson} {params or ''}: {results[-1]['agreed']} of {results[-1]['runs']} in "
                    f"{results[-1]['seconds']:.0f} s",
                    flush=True,
                )
            write_block(
                "results" if part == "lessons" else "variants",
                table(results, commit, args.seed, began, (f"{before:.1f}", f"{os.getloadavg()[0]:.1f}")),
            )
            print(f"wrote the {part} table of {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
