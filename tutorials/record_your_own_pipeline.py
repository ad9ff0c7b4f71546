"""Re-record the outputs shown in tutorials/your-own-pipeline.md by running its commands for real.

Each block of the page marked ``<!-- recorded: NAME -->`` is the output of a command run here, in a fresh
process, exactly as a reader types it (with the project's venv): ``compare`` and ``fuzz`` on the example
pipeline file, ``compare`` on the example of two outputs, then a local cluster started on its default ports, ``compare --master`` on it, and the cluster
stopped. The commands run in a copy of the last commit (``git archive HEAD``), so that work in progress in the
tree cannot change what is recorded. ``tests/lessons/test_pipeline_file.py`` checks the page's claims.

    .venv/bin/python tutorials/record_your_own_pipeline.py        # about three minutes on 2 cores
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from record_cluster import ENV, MASTER, replace_block, snapshot

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "tutorials" / "your-own-pipeline.md"
FILES = "examples/my_pipeline.py --events examples/my-events.jsonl"
COMMANDS = {
    "compare": f"ministream compare {FILES}",
    "fuzz": "ministream fuzz examples/my_pipeline.py --runs 5 --seed 0",
    "compare-outputs": "ministream compare examples/two_outputs.py --events examples/my-events.jsonl",
    "cluster-start": "ministream cluster start",
    "compare-cluster": f"ministream compare {FILES} --master {MASTER}",
    "cluster-stop": "ministream cluster stop",
}


def run(command: str, here: Path) -> str:
    """Run a command in the snapshot; return '$ command' and what it printed on stdout (the progress bar and
    Spark's start go to stderr, which the page leaves out)."""
    done = subprocess.run(command, shell=True, cwd=here, env=ENV, capture_output=True, check=False, text=True)
    if done.returncode != 0:
        sys.exit(f"`{command}` failed with status {done.returncode}:\n{done.stdout}{done.stderr[-3000:]}")
    return f"$ {command}\n{done.stdout}"


def main() -> None:
    here = Path(tempfile.mkdtemp(prefix="ministream-record-"))
    commit = snapshot(here)
    blocks = {name: run(COMMANDS[name], here) for name in ("compare", "fuzz", "compare-outputs", "cluster-start")}
    try:
        blocks["compare-cluster"] = run(COMMANDS["compare-cluster"], here)
    finally:
        blocks["cluster-stop"] = run(COMMANDS["cluster-stop"], here)
    text = PAGE.read_text()
    for name, body in blocks.items():
        text = replace_block(text, name, body)
    PAGE.write_text(text)
    shutil.rmtree(here, ignore_errors=True)
    print(f"re-recorded {len(blocks)} blocks of {PAGE.relative_to(ROOT)} at commit {commit}")


if __name__ == "__main__":
    main()
