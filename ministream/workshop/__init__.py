"""The workshop: the notebooks as a course, with exercises that check themselves against Spark.

In each lesson notebook the learner writes a piece of the engine or of a pipeline (a window assigner, a
watermark update, a session merge, a join's state bound, a barrier alignment step...) and a check cell runs it
on the lesson's events and compares it with Spark's answer; when they differ, it says where (which event,
batch or row) and which rule was missed.

- ``exercises.py``: the exercises, their tasks and starter cells;
- ``checks_*.py``: the checks (``feedback.py``: how they report; ``oracle.py``: where the right answers come
  from, Spark or ministream);
- ``solutions.py``: the solutions, kept apart; the test suite runs every notebook with them filled in;
- ``notebooks/``: one module per notebook, which generates it (``notebooks/cells.py``: the cells they share,
  the exercises placed before each recap, the kernel they ask for);
- ``course.py``, ``build.py``: the notebooks in teaching order, and the step that writes them;
- ``progress.py``: what long work says while it runs, as plain lines and progress bars (Spark starting, a
  planned crash, the notebooks of a check);
- ``timings.py``: how long each notebook takes, for ``tutorials/instructor-guide.md``;
- ``commands.py``: ``ministream workshop list | copy DIR | check | build | timings`` (also
  ``python -m ministream.workshop``).

>>> from ministream.workshop.solutions import window_of
>>> from ministream.workshop.checks_windows import check_window_of
>>> check_window_of(window_of, against="ministream")
✓ window_of: 19 events land in the same window as in ministream's window()
"""
