"""The workshop's commands: ``ministream workshop ...``, also ``python -m ministream.workshop ...``.

    ministream workshop [list]                    the course: notebooks in teaching order, lessons, exercises
    ministream workshop copy DIR [--force]        write the notebooks into DIR, to open them in Jupyter
    ministream workshop check [NOTEBOOK...]       run notebooks headless, exercises solved; exit 1 if one fails
                                                  (a progress bar on stderr, a line per notebook)
        [--folder DIR]                            (the notebooks of DIR, checked to be current, instead of the
                                                  ones the installed package generates)
    ministream workshop build [DIR]               regenerate the notebooks of DIR (default notebooks) from
                                                  their modules in ministream/workshop/notebooks/
    ministream workshop timings [NOTEBOOK...]     run each in a fresh kernel, measure, and fill the table of
        [--guide FILE]                            tutorials/instructor-guide.md when it is there

Every command works from an installed package: the notebooks are generated from the package's modules, never
read from a repository. ``make workshop-check`` is ``check --folder notebooks``.

>>> main(["list"])  # doctest: +ELLIPSIS
 0  00-start-here.ipynb                how to start, the path through the course
 1  01-running-aggregation.ipynb       running-aggregation; exercises key_group, update_batch
...
13  15-checkpoints.ipynb               checkpoint-recovery, barrier-alignment, rescale; exercises restart_at, barrier_arrives
14  19-game-heartbeats.ipynb           game-heartbeats; exercises session_timer, next_beat
0
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from pathlib import Path

from ministream.workshop.build import build, copy_notebooks, course_sources, stale_notebooks
from ministream.workshop.course import course
from ministream.workshop.exercises import exercises_of
from ministream.workshop.notebooks.cells import KERNELSPEC, NotebookSource, to_notebook
from ministream.workshop.progress import progress_bar
from ministream.workshop.timings import GUIDE, execute, last_line, measure, timings_table, write_table

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


def cmd_list(args, out) -> int:
    """One line per notebook, in teaching order: its file, its lessons and its exercises."""
    print(f"{0:>2}  {course_sources()[0].name:<34} how to start, the path through the course", file=out)
    for number, step in enumerate(course(), start=1):
        exercises = ", ".join(exercise.function for exercise in exercises_of(step.lessons))
        print(f"{number:>2}  {step.name:<34} {', '.join(step.lessons)}; exercises {exercises or '-'}", file=out)
    return EXIT_OK


def _selected(names: list[str], folder: Path | None) -> list[tuple[str, object]]:
    """The notebooks a command runs, as ``(name, notebook)``: the named ones (a file name of the course, or the
    path of a notebook file) or the whole course; read from ``folder``, or generated when it is ``None``."""
    import nbformat

    sources: dict[str, NotebookSource] = {source.name: source for source in course_sources()}
    wanted = names or list(sources)
    notebooks = []
    for name in wanted:
        if folder is not None and (folder / name).exists():
            notebooks.append((name, nbformat.read(folder / name, as_version=4)))
        elif name in sources and folder is None:
            notebooks.append((name, to_notebook(sources[name])))
        elif Path(name).exists():
            notebooks.append((Path(name).name, nbformat.read(name, as_version=4)))
        else:
            where = f"in {folder}" if folder is not None else "in the course"
            raise FileNotFoundError(f"no notebook {name!r} {where} (ministream workshop list names them)")
    return notebooks


def cmd_check(args, out) -> int:
    """Execute notebooks headless with the solutions filled in; report each, and exit 1 if one fails."""
    folder = Path(args.folder) if args.folder else None
    failed = []
    if folder is not None and not args.notebooks:
        for problem in stale_notebooks(folder):
            failed.append(problem)
            print(f"STALE   {problem}: run `python -m ministream.workshop build {folder}`", file=out)
    notebooks = _selected(args.notebooks, folder)
    # A bar on stderr counts the notebooks and names the one running; each one's result prints above it, on out.
    with (
        tempfile.TemporaryDirectory(prefix="ministream-workshop-") as scratch,
        progress_bar(len(notebooks), "workshop check", unit="notebook", out=out) as step,
    ):
        for name, notebook in notebooks:
            step.doing(f"running {name}")
            try:
                execute(notebook, folder or Path(scratch))
                step(f"ok      {name}")
            except Exception as error:  # report every notebook, then fail
                failed.append(name)
                step(f"FAILED  {name}: {last_line(error)}")
        step.doing("workshop check")
    ran = len(notebooks) - len([name for name in failed if name in dict(notebooks)])
    print(f"{ran} of {len(notebooks)} notebooks ran with their solutions", file=out)
    return EXIT_FAILED if failed else EXIT_OK


def cmd_build(args, out) -> int:
    """Regenerate the notebooks of a folder from their modules."""
    folder = Path(args.folder)
    if not folder.is_dir():
        print(
            f"ministream workshop: no folder {folder}/ here: run build from the repository's root, or name the "
            "folder (a learner gets the notebooks with `ministream workshop copy DIR`)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    changed = build(folder, log=lambda line: print(line, file=out))
    print(f"{len(changed)} of {len(course_sources())} notebooks updated in {folder}/", file=out)
    return EXIT_OK


def cmd_copy(args, out) -> int:
    """Write the notebooks into a folder of the user's choice, and say how to open them."""
    folder = Path(args.folder)
    copy_notebooks(folder, force=args.force, log=lambda line: print(line, file=out))
    print(
        f"open them with: jupyter lab {folder / course_sources()[0].name}\n"
        f"(they ask for the kernel {KERNELSPEC['display_name']!r}; any kernel of the Python ministream is "
        "installed in runs them)",
        file=out,
    )
    return EXIT_OK


def cmd_timings(args, out) -> int:
    """Execute each notebook in a fresh kernel, measure, print the table, and write it into the guide."""
    folder = Path(args.folder) if args.folder else None
    with tempfile.TemporaryDirectory(prefix="ministream-workshop-") as scratch:
        timings = measure(
            _selected(args.notebooks, folder), folder or Path(scratch), log=lambda *a, **k: print(*a, **k, file=out)
        )
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    table = timings_table(timings, now)
    print(table, file=out)
    guide = Path(args.guide)
    if args.notebooks:
        print(f"(only some notebooks: {guide} left alone)", file=out)
    elif guide.exists():
        write_table(table, guide)
        print(f"wrote the table into {guide}", file=out)
    else:
        print(f"(no {guide} here: the table is printed only)", file=out)
    return EXIT_FAILED if any(timing.error for timing in timings) else EXIT_OK


def build_parser(prog: str = "python -m ministream.workshop") -> argparse.ArgumentParser:
    """The command line of the workshop's commands."""
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__.split("\n\n>>>")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("list", help="the notebooks in teaching order").set_defaults(handler=cmd_list)

    copy = commands.add_parser("copy", help="write the notebooks into a folder, to open them in Jupyter")
    copy.add_argument("folder", help="the folder to write into (created if need be)")
    copy.add_argument("--force", action="store_true", help="overwrite notebooks already there")
    copy.set_defaults(handler=cmd_copy)

    check = commands.add_parser("check", help="run notebooks headless with the solutions filled in")
    check.add_argument("notebooks", nargs="*", help="notebook names or files (default: the whole course)")
    check.add_argument("--folder", help="run the notebooks of this folder, checked to be current first")
    check.set_defaults(handler=cmd_check)

    build_command = commands.add_parser("build", help="regenerate a folder's notebooks from their modules")
    build_command.add_argument("folder", nargs="?", default="notebooks", help="default: notebooks")
    build_command.set_defaults(handler=cmd_build)

    timings = commands.add_parser("timings", help="measure each notebook; fill the instructor guide's table")
    timings.add_argument("notebooks", nargs="*", help="notebook names or files (default: the whole course)")
    timings.add_argument("--folder", help="run the notebooks of this folder instead of the generated ones")
    timings.add_argument("--guide", default=str(GUIDE), help=f"the guide whose table to fill (default {GUIDE})")
    timings.set_defaults(handler=cmd_timings)
    parser.set_defaults(handler=cmd_list)
    return parser


def main(argv: list[str] | None = None, out=None, prog: str = "python -m ministream.workshop") -> int:
    """Run a workshop command; returns the exit status."""
    out = out or sys.stdout
    args = build_parser(prog).parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        return args.handler(args, out)
    except FileNotFoundError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EXIT_ERROR
