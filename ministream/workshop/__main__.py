"""``python -m ministream.workshop build | check [NOTEBOOK...] | timings [NOTEBOOK...]``.

- ``build``: insert the exercises into the lesson notebooks and write ``notebooks/00-start-here.ipynb``;
- ``check``: execute notebooks headless with the solutions filled in (every notebook when none is named);
  exit 1 if one fails (``make workshop-check``);
- ``timings``: execute them one by one, measure, and write the table of ``tutorials/instructor-guide.md``.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from ministream.workshop.build import build, stale_notebooks
from ministream.workshop.course import NOTEBOOKS, START_HERE, course
from ministream.workshop.timings import execute, measure, timings_table, write_table


def _paths(names: list[str]) -> list[Path]:
    if names:
        return [Path(name) if Path(name).exists() else NOTEBOOKS / name for name in names]
    return [NOTEBOOKS / START_HERE] + [step.path for step in course()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ministream.workshop", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=("build", "check", "timings"))
    parser.add_argument("notebooks", nargs="*", help="notebook files or names (default: the whole course)")
    parser.add_argument(
        "--wait-for-authors",
        action="store_true",
        help="build: leave alone the notebooks with uncommitted changes or committed minutes ago",
    )
    args = parser.parse_args(argv)
    if args.command == "build":
        build(wait_for_authors=args.wait_for_authors)
        return 0

    paths = _paths(args.notebooks)
    if args.command == "check":
        failed = [
            f"{name} (exercises missing or out of date: run python -m ministream.workshop build)"
            for name in stale_notebooks()
        ]
        for problem in failed:
            print(f"STALE   {problem}")
        for path in paths:
            try:
                execute(path)
                print(f"ok      {path.name}")
            except Exception as error:  # report every notebook, then fail
                failed.append(path.name)
                print(f"FAILED  {path.name}: {str(error).strip().splitlines()[-1] if str(error).strip() else error}")
        ran = len(paths) - len([name for name in failed if not name.endswith("build)")])
        print(f"{ran} of {len(paths)} notebooks ran with their solutions")
        return 1 if failed else 0
    timings = measure(paths)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    table = timings_table(timings, now)
    print(table)
    if not args.notebooks:
        write_table(table)
    return 1 if any(timing.error for timing in timings) else 0


if __name__ == "__main__":
    sys.exit(main())
