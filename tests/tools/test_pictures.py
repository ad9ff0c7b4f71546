"""What a learner sees of diagrams and plots: diagrams fit a page (rendered, at most 900 points wide), read top to
bottom in one font with durations in words and no label said twice; the checkpoint lessons' pictures show what
they teach; every plot renders as a PNG that is not blank, the committed images are real images, and every
image a tutorial links exists."""

import itertools
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ministream.checkpoints.storage import MemoryStorage
from ministream.lessons import all_lessons, get_lesson
from ministream.lessons.barrier_alignment import ALIGNMENT_SEED, checkpointed_run
from ministream.lessons.rescale import keys_moved
from ministream.tools.diagram import (
    architecture_dot,
    recovery_timeline_dot,
    render_svg,
    rescale_dot,
    setting_dots,
    to_dot,
)
from ministream.tools.pictures import FOLDER, PICTURES
from ministream.tools.plots import ink, png_bytes

ROOT = Path(__file__).resolve().parents[2]
DIAGRAMS = ROOT / "diagrams"
MAX_WIDTH_PT = 900
DURATIONS = ("delay", "size", "slide", "gap", "timeout", "ttl", "heartbeat", "lateness", "within", "window")


def every_diagram() -> dict[str, str]:
    """The DOT text of every diagram `make diagrams` draws, by file name."""
    found = {}
    for lesson in all_lessons():
        flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
        found[f"{lesson.name}.svg"] = to_dot(flow)
        found[f"{lesson.name}.physical.svg"] = to_dot(flow, 2)
    storage = MemoryStorage()
    run = get_lesson("checkpoint-recovery").run(storage=storage, trace=True)
    found["checkpoint-recovery.timeline.svg"] = recovery_timeline_dot(run, storage)
    found["rescale.keygroups.svg"] = rescale_dot(*keys_moved(), "counts")
    for number, (_caption, dot) in enumerate(checkpointed_run(seed=ALIGNMENT_SEED, pictures=True).pictures[:3], 1):
        found["barrier-alignment.barriers.svg" if number == 1 else f"barrier-alignment.barriers-{number}.svg"] = dot
    found["architecture.svg"] = architecture_dot()
    found |= setting_dots()
    return found


DIAGRAM_DOT = every_diagram()


def svg_width(svg_text: str) -> float:
    return float(re.search(r'<svg width="([0-9.]+)pt"', svg_text).group(1))


def test_every_diagram_fits_a_page_when_rendered(tmp_path):
    """Rendered by Graphviz, no diagram is wider than 900 points (the stream-join physical plan was 1814)."""
    widths = {name: svg_width(render_svg(dot, tmp_path / name).read_text()) for name, dot in DIAGRAM_DOT.items()}
    assert {name: width for name, width in widths.items() if width > MAX_WIDTH_PT} == {}
    assert widths["stream-join.physical.svg"] < 800


def test_every_committed_diagram_is_current_and_fits():
    """Every diagram `make diagrams` draws is committed, as an SVG at most 900 points wide."""
    for name in DIAGRAM_DOT:
        svg = (DIAGRAMS / name).read_text()
        assert ET.fromstring(svg.split("-->", 2)[-1].strip()).tag.endswith("svg"), name
        assert svg_width(svg) <= MAX_WIDTH_PT, name


def test_lesson_diagrams_read_top_to_bottom_in_one_font():
    """Lesson diagrams are laid out top to bottom, and the only font named anywhere is Helvetica (graph labels
    included: Graphviz's default would be Times)."""
    for name, dot in DIAGRAM_DOT.items():
        assert set(re.findall(r'fontname="([^"]+)"', dot)) == {"Helvetica"}, name
        if name.startswith(tuple(lesson.name for lesson in all_lessons())) and "barriers" not in name:
            assert "rankdir=LR" not in dot, name


def test_no_label_says_the_same_line_twice_and_durations_are_words():
    """A step named after its kind is not labelled "watermark / watermark"; a duration reads "5 seconds", never
    a bare number of milliseconds."""
    for name, dot in DIAGRAM_DOT.items():
        for label in re.findall(r'label="((?:[^"\\]|\\.)*)"', dot):
            lines = [line.strip() for line in re.split(r"\\[nl]", label) if line.strip()]
            assert all(a != b for a, b in itertools.pairwise(lines)), (name, label)
            assert not re.search(rf"\b({'|'.join(DURATIONS)}): -?\d+$", " ".join(lines[-1:])), (name, label)
            for line in lines:
                assert not re.fullmatch(rf"({'|'.join(DURATIONS)}): -?\d+", line), (name, line)


def test_a_join_reads_top_to_bottom_with_its_range_wrapped():
    """The stream-join diagram, as DOT: two input columns meeting at the join, its long range wrapped and left
    aligned, the join named once."""
    lesson = get_lesson("stream-join")
    dot = to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params()))
    assert dot.splitlines()[1:6] == [
        "  rankdir=TB;",
        '  graph [fontname="Helvetica", fontsize=11, nodesep=0.3, ranksep=0.35];',
        '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9, color="#556677"];',
        '  "impressions" [label="impressions\\nsource\\n", fillcolor="#e3f4e1"];',
    ]
    assert (
        '  "impressions_watermark" [label="impressions_watermark\\nwatermark\\ncolumn: impression_time\\l'
        'delay: 10 seconds\\l"];' in dot
    )
    assert (
        '  "join" [label="join\\nhow: inner\\lkey: impression_ad = click_ad\\lbetween: impression_time + 0 seconds\\l'
        '  <= click_time <= impression_time +\\l  20 seconds\\l", fillcolor="#fdf0d5"];' in dot
    )


def test_a_physical_plan_puts_each_description_beside_its_subtasks():
    """With parallelism 2, a step is a frame holding a plain description node and its subtasks on one rank (so no
    arrow crosses the description), and a route is named once, on its first arrow."""
    lesson = get_lesson("running-aggregation")
    dot = to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params()), 2)
    assert (
        """  subgraph "cluster_totals" {
    style="rounded"; color="#8899aa";
    { rank=same; "totals" [shape=plaintext, style="", label="totals\\naggregate\\nkey: key\\laggregates: count=count(*),\\l  sum=sum(value)\\l"];
      "totals[0]" [label="totals[0]", fillcolor="#fdf0d5"];
      "totals[1]" [label="totals[1]", fillcolor="#fdf0d5"];
    }
  }"""
        in dot
    )
    assert dot.splitlines()[-5:] == [
        '  "events[0]" -> "totals[0]" [label="hash by key"];',
        '  "events[0]" -> "totals[1]";',
        '  "totals[0]" -> "output[0]" [label="gather"];',
        '  "totals[1]" -> "output[0]" [label="gather"];',
        "}",
    ]
    assert "label=" not in dot.split('subgraph "cluster_totals" {')[1].split("{ rank=same;")[0]  # no frame label


def test_the_recovery_timeline_shows_the_logs_the_crash_and_the_restart():
    """checkpoint-recovery.timeline.svg, as DOT: a table read top to bottom, one row per batch run, with its
    offsets log entry and its commit; batch 3 crashes uncommitted, the restart restores chk-2 and runs batch 3
    again under the same id and watermark."""
    rows = DIAGRAM_DOT["checkpoint-recovery.timeline.svg"].splitlines()
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows if row.startswith("<tr>")]
    shown = [[" ".join(re.sub(r"<[^>]+>", " ", cell).split()) for cell in row] for row in cells]
    assert [row[:5] for row in shown[1:]] == [
        ["first run", "0", "0 (none yet)", "offsets/0: events up to 1", "chk-0 written"],
        ["", "1", "09:59:58", "offsets/1: events up to 2", "chk-1 written"],
        ["", "2", "10:00:07", "offsets/2: events up to 3", "chk-2 written"],
        ["", "3", "10:00:20", "offsets/3: events up to 4", "none: never committed"],
        ["restart", "", "", "offsets/3 without chk-3: batch 3 runs again", "restore chk-2"],
        ["restarted run", "3", "10:00:20", "offsets/3: events up to 4", "chk-3 written"],
        ["", "4", "10:00:35", "offsets/4: events up to 4", "chk-4 written"],
    ]
    assert shown[4][5] == "the sink crashed while writing batch 3, after 1 of its 3 rows"
    assert shown[6][5] == "ran again, same id and watermark"


def test_the_barrier_pictures_explain_their_symbols_and_show_barriers_moving():
    """Each barrier picture carries a key to its symbols; the three moments drawn show barrier 1, then 2, then
    3 to 5 waiting in the channels, with a different input held back."""
    moments = [DIAGRAM_DOT[f"barrier-alignment.barriers{suffix}.svg"] for suffix in ("", "-2", "-3")]
    for dot in moments:
        assert dot.splitlines()[-2] == (
            '  "legend" [shape=plaintext, fontsize=10, label="on each arrow, what waits in that channel, oldest '
            "first:\\l  3 rows: rows not read yet\\l  B1: the barrier of checkpoint 1\\l  W: a watermark\\l"
            '  empty: nothing waits\\l  red and dashed: an input held back\\l"];'
        )
    held = [[line for line in dot.splitlines() if "held back)" in line] for dot in moments]
    assert [lines[0].split(" -> ")[0].strip() for lines in held] == ['"web[0]"', '"mobile[0]"', '"mobile[0]"']
    assert '[label="B1"]' in moments[0] and '[label="B2"]' in moments[1] and "B3 | 2 rows | B4" in moments[2]


def test_the_rescale_picture_moves_key_groups_to_the_new_subtasks():
    """rescale.keygroups.svg, as DOT: the two subtasks before, the four after, each with its key groups and keys,
    and an arrow for each range of key groups that moves."""
    dot = DIAGRAM_DOT["rescale.keygroups.svg"]
    assert '  "before_0" [label="counts[0] of 2 (before)\\nkey groups 0-63\\nkeys: alice, heidi"];' in dot
    assert '  "after_1" [label="counts[1] of 4 (after)\\nkey groups 32-63\\nkeys: alice"];' in dot
    assert [line.strip() for line in dot.splitlines() if "->" in line] == [
        '"before_0" -> "after_0" [label="key groups 0-31"];',
        '"before_0" -> "after_1" [label="key groups 32-63"];',
        '"before_1" -> "after_2" [label="key groups 64-95"];',
        '"before_1" -> "after_3" [label="key groups 96-127"];',
    ]


# -- plots ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("picture", PICTURES, ids=lambda picture: picture.file)
def test_every_plot_renders_as_an_image_that_is_not_blank(picture):
    """Each tutorial plot, drawn from the lesson's own events, shows itself as a PNG (as Jupyter asks for it) with
    at least 2% of its pixels drawn."""
    figure = picture.draw()
    png = figure._repr_png_()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert ink(png) > 0.02
    assert png == png_bytes(figure)


@pytest.mark.parametrize("picture", PICTURES, ids=lambda picture: picture.file)
def test_every_committed_plot_is_a_real_image(picture):
    """diagrams/plots/LESSON.NAME.png exists for every plot (`make diagrams` writes them), decodes as a PNG of
    a sensible size, and is not blank."""
    from matplotlib.image import imread

    path = DIAGRAMS / FOLDER / picture.file
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    height, width = imread(path).shape[:2]
    assert 300 <= width <= 900 and 150 <= height <= 900, (width, height)
    assert ink(data) > 0.02


def test_every_lesson_has_a_plot():
    """Every lesson has at least one plot of its own events."""
    assert {lesson.name for lesson in all_lessons()} <= {picture.lesson for picture in PICTURES}


# -- tutorials ----------------------------------------------------------------------------------------------------

LESSON_PAGES = sorted(path for path in (ROOT / "tutorials").glob("[0-9][0-9]-*.md"))
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", [*LESSON_PAGES, ROOT / "README.md"], ids=lambda path: path.name)
def test_every_image_a_page_links_exists(page):
    """Every image a tutorial (or the README) links is a file of the repository, with alt text."""
    links = IMAGE.findall(page.read_text())
    missing = [target for _alt, target in links if not (page.parent / target).resolve().is_file()]
    assert missing == []
    assert all(alt.strip() for alt, _target in links)


@pytest.mark.parametrize("page", LESSON_PAGES, ids=lambda path: path.name)
def test_every_tutorial_shows_its_diagram_and_a_plot_of_its_events(page):
    """Each lesson's tutorial shows the lesson's diagram and at least one of its plots."""
    number = int(page.name[:2])
    lesson = all_lessons()[number - 1]
    targets = [Path(target).name for _alt, target in IMAGE.findall(page.read_text())]
    assert any(name.startswith(lesson.name) and name.endswith(".svg") for name in targets), targets
    assert any(name in targets for name in (p.file for p in PICTURES if p.lesson == lesson.name)), targets
