"""Notebook 03, sliding windows: one event, several windows.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('03-sliding-window.ipynb', ('sliding-window',))
"""

from ministream.workshop.notebooks.cells import (
    NotebookSource,
    code,
    event_time_plot,
    lesson_diagram,
    lesson_events,
    markdown,
)

NOTEBOOK = NotebookSource(
    3,
    "sliding-window",
    ("sliding-window",),
    [
        markdown("""# 3. Sliding windows: one event, several windows

**At the end of this notebook you will be able to** list the windows an event belongs to for any size, slide
and offset, and explain why an old event can be dropped from one of its windows and still count in another.

The tutorial page is `tutorials/03-sliding-window.md`; the code is `ministream/time/windows.py` and
`ministream/lessons/sliding_window.py`."""),
        lesson_events("sliding-window"),
        markdown("""## The windows of one event

10-second windows starting every 5 seconds: two per event. With an offset, every start moves."""),
        code("""from ministream.time.windows import Sliding, describe_window

event = lesson.default_script[1][2]
for windows in (Sliding("10 seconds", "5 seconds"), Sliding("10 seconds", "5 seconds", offset="2 seconds"),
                Sliding("7 seconds", "3 seconds")):
    print(windows.describe(), "->", [describe_window(*w) for w in windows.assign(event["ts"])])"""),
        markdown("""## The dataflow"""),
        lesson_diagram(),
        markdown("""## The output, and the late event

`a` at 10:00:08 arrives in the last batch: too late for `[10:00:00, 10:00:10)`, in time for
`[10:00:05, 10:00:15)`."""),
        code("""run = lesson.run(trace=True)
print_batches(run.output(), sys.stdout)
for late in run.late_rows():
    print("late:", format_row(late.row), "for", describe_window(*late.window), "-", late.rule)"""),
        markdown("""The red cross marks the event dropped from one of its windows."""),
        event_time_plot("sliding-window: the event at 10:00:08 is late for one of its two windows"),
        markdown("""## The PySpark twin, with and without an offset"""),
        code("""from ministream.lessons import compare_lesson

for params in ({}, {"offset": "2 seconds"}):
    result = compare_lesson(lesson, params=params)
    print(params, result.summary())
    assert result.matches"""),
        markdown("""## Recap

- Sliding windows of `size` start every `slide` (plus `offset`); an event is in every window containing it.
- Late data is dropped per window: the watermark closes each window by its own end.
- Spark refuses `slide > size` and `|offset| >= slide`, and so does ministream."""),
    ],
)
