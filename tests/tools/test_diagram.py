"""Diagrams are code: DOT text from the pipeline, rendered to SVG by Graphviz."""

import pytest

from ministream.lessons import all_lessons, get_lesson
from ministream.tools.diagram import bad_lines_dot, render_svg, setting_dots, to_dot
from tests.operators.test_dedup import pruned_dedup
from tests.operators.test_removed_outer_join import shape_flow


def test_every_lesson_has_a_committed_diagram():
    """diagrams/LESSON.svg exists for every lesson (regenerate with `make diagrams`)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "diagrams"
    missing = [lesson.name for lesson in all_lessons() if not (root / f"{lesson.name}.svg").exists()]
    assert missing == []


@pytest.mark.viz
def test_diagram_renders_to_svg_with_every_step(tmp_path):
    """A lesson's DOT text renders to an SVG that names each of its steps."""
    lesson = get_lesson("running-aggregation")
    flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
    svg = render_svg(to_dot(flow), tmp_path / "d.svg").read_text()
    assert svg.startswith("<?xml") and all(step.name in svg for step in flow.steps)


def test_physical_diagram_draws_one_arrow_per_channel():
    """With parallelism 3, the keyed step has 3 subtasks and the hash edge 3 arrows."""
    lesson = get_lesson("running-aggregation")
    dot = to_dot(lesson.pipeline(lesson.default_script, {}), parallelism=3)
    assert dot.count('"events[0]" -> "totals[') == 3
    assert dot.count('-> "output[0]"') == 3


def test_the_architecture_diagram_shows_every_layer_and_module_in_the_contract_order():
    """diagrams/architecture.svg is drawn from the package: every layer, every module, in import-linter's order."""
    import tomllib
    from pathlib import Path

    from ministream.tools.diagram import LAYERS, architecture_dot, layer_imports, package_modules

    root = Path(__file__).resolve().parents[2]
    contract = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    assert [layer.removeprefix("ministream.") for layer in reversed(contract["layers"])] == list(LAYERS)
    dot = architecture_dot()
    for layer, modules in package_modules().items():
        assert f'"{layer}" [label="{layer}' in dot
        assert all(module in dot for module in modules), layer
    assert all(LAYERS.index(importer) > LAYERS.index(imported) for importer, imported in layer_imports())
    assert (root / "diagrams" / "architecture.svg").exists()


def test_a_diagram_says_what_sparks_optimizer_changes_in_a_step():
    """A join Spark removes, and a deduplication whose event time Spark prunes, say so in their labels."""
    removed = to_dot(shape_flow("left outer, tumbling max")).replace("\\l  ", " ")  # the label's lines, joined
    assert "removed by Spark (EliminateOuterJoin): passes on the left rows" in removed
    settings = {name: dot.replace("\\l  ", " ") for name, dot in setting_dots().items()}
    assert "removed by Spark" in settings["outer-join.max-window.svg"]
    assert "no late rows: Spark prunes ts" in settings["deduplication.keep-id.svg"]
    assert (
        "filter 'campaign', copied from impression_ad to click_ad, runs below it"
        in settings["stream-join.campaign.svg"]
    )
    assert "no late rows: Spark prunes ts" in to_dot(pruned_dedup("id")).replace("\\l  ", " ")
    assert "Spark prunes" not in to_dot(pruned_dedup("id, ts"))


def test_the_bad_lines_diagram_fits_a_page_with_long_reasons(tmp_path):
    """An events file read two ways (ministream's dead letters, Spark's nulls): each reason is cut to two lines,
    so that the diagram stays under 900 points wide however long the reasons are."""
    import re
    from types import SimpleNamespace as Of

    readings = [
        Of(
            letter=Of(line=number, reason="field 'key': missing: every event needs " + "'a', " * 30),
            spark=Of(line=number, rows=[{"batch": 0, "ts": None, "key": None, "value": 1.0}], corrupt=True),
        )
        for number in range(2, 12)
    ]
    both = Of(script=[[{"ts": 1}]], readings=readings, spark_script=[[{}] * 11])
    dot = bad_lines_dot(both, "events.jsonl")
    assert "events.jsonl: 11 lines, 10 bad" in dot and "line 11: ts, key null (malformed)" in dot
    assert dot.count("line 7:") == 2  # one line of the reason (cut), one of what Spark read
    svg = render_svg(dot, tmp_path / "bad.svg").read_text()
    assert float(re.search(r'<svg width="([0-9.]+)pt"', svg).group(1)) <= 900
