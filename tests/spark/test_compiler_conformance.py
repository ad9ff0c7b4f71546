"""The conformance cases replayed in Spark through twins *compiled* from their ministream pipelines
(``spark/compiler``) instead of their hand-written twins: each compiled twin must give every answer the
upstream test asserts. A case whose pipeline the compiler refuses is left out here (the refusal says why:
``tutorials/spark-facts.md``); the census test counts them."""

import collections

import attrs
import pytest

from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.errors import PipelineError
from ministream.spark.compiler import CompileError, compile_flow
from ministream.spark.compiler.schema import ddl_schema
from tests.conformance.catalog import ENGINE_CASES, SPARK_CASES, case_id
from tests.conformance.harness import Case, Inputs


def compiled_query(case: Case, query):
    """The query with its twin compiled from its pipeline (``CompileError`` when Spark cannot run it). The twin
    compiles the pipeline again when the replay runs it, built with the replay's ``Inputs.memory``: a pipeline
    whose functions keep something there (a failure injected once) then keeps it where Spark's workers see it."""

    def compile_with(memory: dict):
        flow = Dataflow(case.test[:40])
        streams = {name: flow.source(name, ScriptedSource([], columns=case.columns(name))) for name in case.inputs}
        query.pipeline(Inputs(streams, memory)).sink("sink", CollectingSink())
        return compile_flow(
            flow,
            {},
            output_mode=query.output_mode,
            sink="sink",
            schemas={name: ddl_schema(ddl) for name, ddl in case.inputs.items()},
            watermark_policy=query.conf.get("spark.sql.streaming.multipleWatermarkPolicy", "min"),
        )

    compiled = compile_with({})
    return attrs.evolve(
        query, twin=lambda inputs: compile_with(inputs.memory).twin(inputs, {}), conf={**compiled.conf, **query.conf}
    )


def compiled_case(case: Case) -> Case | None:
    """The case with every query's twin compiled, or ``None`` when the compiler refuses one of them, or when
    the plan refuses the case's own pipeline (a case that expects that refusal: no twin to compile)."""
    try:
        queries = {name: compiled_query(case, query) for name, query in case.queries.items()}
    except (CompileError, PipelineError):
        return None
    return attrs.evolve(case, queries=queries)


pytestmark = pytest.mark.spark

COMPILED = [case for case in SPARK_CASES if isinstance(case, Case) and compiled_case(case) is not None]


def test_the_census_of_compiled_cases():
    """How many conformance queries the compiler writes, and the refusals of the others, by rule: every query
    is compiled or refused with a CompileError, none fails otherwise."""
    compiled, refused = 0, collections.Counter()
    for case in ENGINE_CASES:
        if not isinstance(case, Case):
            continue
        for query in case.queries.values():
            if query.pipeline is None or query.twin is None:
                continue
            try:
                compiled_query(case, query)
                compiled += 1
            except CompileError as error:
                refused[str(error).split(": ", 1)[1][:60]] += 1
            except Exception as error:  # the case's own pipeline refused by the plan, as the case expects
                refused[f"the plan refuses it: {type(error).__name__}"] += 1
    assert compiled >= 125, (compiled, refused)


@pytest.mark.parametrize("case", COMPILED, ids=case_id)
def test_spark_with_the_compiled_twin(case, spark):
    """Spark, running the twin compiled from the case's pipeline, gives every answer the test asserts."""
    from tests.conformance.spark_replay import run_spark

    run_spark(compiled_case(case), spark)
