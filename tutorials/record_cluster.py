"""Re-record the commands, outputs and timings shown in tutorials/cluster.md by running them for real.

Each block of the page marked ``<!-- recorded: NAME -->`` is the output of a command run here, in a fresh
process, exactly as a reader would type it (with the project's venv): the cluster is started on its default
ports, ``compare --all`` runs locally and then on the cluster, and the cluster is stopped. The commands run in
a copy of the last commit (``git archive HEAD``), so that work in progress in the tree cannot change what is
recorded. ``tests/spark/test_cluster.py`` checks the page's claims (same summary, every lesson, today's lessons).

    .venv/bin/python tutorials/record_cluster.py        # about five minutes on 2 cores
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "tutorials" / "cluster.md"
MASTER = "spark://127.0.0.1:7077"
BIN = Path(sys.executable).parent
ENV = {
    **os.environ,
    "TZ": "UTC",
    "SPARK_LOCAL_IP": "127.0.0.1",
    "PYSPARK_PYTHON": sys.executable,
    "PYSPARK_DRIVER_PYTHON": sys.executable,
    "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
}
ENV.pop("MINISTREAM_SPARK_MASTER", None)

# Run in a fresh process: start a session on a master, compare a lesson once (the first micro-batches of a
# process pay for starting Python workers and compiling code), then a 20-batch script (the steady cost).
TIMING_PROBE = """
import json, sys, time
began = time.monotonic()
from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.lesson import event
from ministream.spark import spark_session
spark = spark_session(sys.argv[1])
session = time.monotonic()
lesson = get_lesson("running-aggregation")
assert compare_lesson(lesson, master=sys.argv[1]).matches
first = time.monotonic()
script = [[event(second, "abc"[second % 3], 1)] for second in range(20)]
assert compare_lesson(lesson, script, master=sys.argv[1]).matches
steady = time.monotonic()
print(json.dumps({"session": session - began, "first": first - session, "per_batch": (steady - first) / 20}))
"""


def snapshot(into: Path) -> str:
    """Copy the last commit's files into ``into`` and make its ``ministream`` the one imported; return its id."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    ENV["PYTHONPATH"] = str(into)  # ahead of the venv's editable install of the working tree
    return commit


def run(command: str) -> tuple[str, float]:
    """Run a shell command in the snapshot; return '$ command' and its output, and its duration."""
    began = time.monotonic()
    done = subprocess.run(command, shell=True, cwd=HERE, env=ENV, capture_output=True, check=False, text=True)
    seconds = time.monotonic() - began
    if done.returncode != 0:
        sys.exit(f"`{command}` failed with status {done.returncode}:\n{done.stdout}{done.stderr}")
    return f"$ {command}\n{done.stdout}", seconds


def probe(master: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", TIMING_PROBE, master], cwd=HERE, env=ENV, capture_output=True, check=False, text=True
    )
    if done.returncode != 0:
        sys.exit(f"timing probe on {master} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def replace_block(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- recorded: {re.escape(name)} -->\n```\w*\n).*?(```)", re.S)
    if not pattern.search(text):
        sys.exit(f"{PAGE} has no block <!-- recorded: {name} -->")
    return pattern.sub(lambda match: match[1] + body.rstrip("\n") + "\n" + match[2], text)


HERE = ROOT  # where the commands run: the snapshot, once main() made it


def main() -> None:
    global HERE
    HERE = Path(tempfile.mkdtemp(prefix="ministream-record-"))
    commit = snapshot(HERE)
    blocks, seconds = {}, {}
    blocks["compare-local"], seconds["compare-local"] = run("ministream compare --all")
    local = probe("local[2]")
    blocks["cluster-start"], seconds["cluster-start"] = run("ministream cluster start")
    try:
        blocks["cluster-status"], _ = run("ministream cluster status")
        blocks["compare-cluster"], seconds["compare-cluster"] = run(f"ministream compare --all --master {MASTER}")
        remote = probe(MASTER)
    finally:
        blocks["cluster-stop"], seconds["cluster-stop"] = run("ministream cluster stop")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = [
        ("", "local[2]", "cluster (1 worker core)"),
        ("ministream cluster start", "-", f"{seconds['cluster-start']:.1f} s"),
        (
            "ministream compare --all (whole command)",
            f"{seconds['compare-local']:.1f} s",
            f"{seconds['compare-cluster']:.1f} s",
        ),
        ("session start, fresh process", f"{local['session']:.1f} s", f"{remote['session']:.1f} s"),
        ("first compare of a process (3 batches)", f"{local['first']:.1f} s", f"{remote['first']:.1f} s"),
        ("each later micro-batch", f"{local['per_batch']:.2f} s", f"{remote['per_batch']:.2f} s"),
        ("ministream cluster stop", "-", f"{seconds['cluster-stop']:.1f} s"),
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    table = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d")
    table.append(f"(recorded {when} at commit {commit}, on {os.cpu_count()} cores; load average {load:.1f} at the end)")
    blocks["timings"] = "\n".join(table)
    text = PAGE.read_text()
    for name, body in blocks.items():
        text = replace_block(text, name, body)
    PAGE.write_text(text)
    shutil.rmtree(HERE, ignore_errors=True)
    print(f"re-recorded {len(blocks)} blocks of {PAGE.relative_to(ROOT)} at commit {commit}")


if __name__ == "__main__":
    main()
