"""The notebooks of the workshop, generated: one module per notebook, and the cells they share.

Each notebook in ``notebooks/`` is written by ``python -m ministream.workshop build`` (``ministream workshop
build``) from its module here, never edited by hand: ``start_here.py`` writes ``00-start-here.ipynb``,
``running_aggregation.py`` writes ``01-running-aggregation.ipynb``, and so on. A module holds the notebook's
text and code as its author wrote them, as a :class:`~ministream.workshop.notebooks.cells.NotebookSource`;
``cells.py`` builds the cells, adds the exercises of the notebook's lessons before its recap and renders the
notebook with the kernel the course runs on. ``ministream.workshop.course`` lists the modules in teaching
order. The tests check that every committed notebook is exactly what its module generates.
"""
