"""The course (``workshop/course.py``): the notebooks in the lessons' teaching order, each opening with its
goals and closing with a recap."""

import re
from pathlib import Path

import pytest

from ministream.lessons import all_lessons
from ministream.workshop.course import course

pytestmark = pytest.mark.notebook


def test_every_lesson_notebook_opens_with_goals_and_closes_with_a_recap():
    """Each notebook of the course says what the learner will be able to do, and ends with a recap."""
    steps = course()
    assert steps and all(step.opening for step in steps), [s.name for s in steps if not s.opening]
    assert all(step.recap for step in steps), [s.name for s in steps if not s.recap]


def test_course_follows_the_teaching_order_of_the_lessons():
    """The course orders notebooks by their first lesson's place in the teaching order, whatever their number."""
    order = {lesson.name: i for i, lesson in enumerate(all_lessons())}
    places = [order[step.lessons[0]] for step in course() if step.lessons]
    assert places == sorted(places) and course()[0].lessons[0] == "running-aggregation"


def test_the_readme_says_which_notebook_teaches_which_lesson():
    """The README names every notebook that teaches several lessons, with its lessons, and every lesson that no
    notebook teaches yet: what it says about the notebooks is what the course is."""
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    paragraph = readme[readme.index("## The lessons") : readme.index("<!-- lessons -->")]
    shared = {
        name: tuple(re.findall(r"`([a-z-]+)`", lessons))
        for name, lessons in re.findall(r"`(\d\d-[a-z-]+\.ipynb)` teaches ((?:`[a-z-]+`(?:, | and )?)+)", paragraph)
    }
    assert shared == {step.name: step.lessons for step in course() if len(step.lessons) > 1}
    taught = {lesson for step in course() for lesson in step.lessons}
    untaught = [lesson.name for lesson in all_lessons() if lesson.name not in taught]
    said = re.search(r"No notebook teaches ((?:`[a-z-]+`(?:, | and )?)+) yet", paragraph)
    assert (re.findall(r"`([a-z-]+)`", said.group(1)) if said else []) == untaught


def test_the_instructor_guide_plans_and_times_every_notebook():
    """The instructor's guide is the course an instructor runs: its plan names every notebook of the course, and
    its table of measured execution times (``ministream workshop timings``) has a row for each."""
    guide = (Path(__file__).resolve().parents[2] / "tutorials" / "instructor-guide.md").read_text()
    plan = guide[guide.index("## The plan") : guide.index("## Measured execution times")]
    timed = guide[guide.index("<!-- timings -->") : guide.index("<!-- /timings -->")]
    stems = [step.name.removesuffix(".ipynb") for step in course()]
    assert [stem for stem in stems if f"`{stem}`" not in plan] == []
    assert [stem for stem in ["00-start-here", *stems] if f"`{stem}.ipynb`" not in timed] == []
