"""Pipeline rule (PP): the stages of one pipeline run carry unequal memory or work, and moving layers helps."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from irlint.accounts.memory import MEMORY_STAGES
from irlint.findings import Fixes, PipelineFix
from irlint.run_rule import RunFile, RunRule
from irlint.units import human_bytes

if TYPE_CHECKING:
    from irlint.findings import Finding
    from irlint.runner.config import Config

from .device_memory import one_op_dump

# the least share by which the plan must lower the worst stage's peak or the slowest stage's FLOPs
THRESHOLD = 0.05


def _stage_text(i: int, layers: int, peak: int, flops: int) -> str:
    return f"stage {i}: {layers} layer{'' if layers == 1 else 's'}, {human_bytes(peak)}, {flops / 1e9:.3g} GFLOP"


class PipelineStageImbalance(RunRule):
    """What it finds:
    The pipeline stages of one run (every stage's dump linted together) whose peaks of device
    memory or FLOPs per micro batch are unequal enough that moving decoder layers between stages lowers the worst
    stage by 5% or more. The first stage holds the embedding and the most micro batches in flight (1F1B), the last
    the norm, head and loss with their vocabulary-sized tensors; the middle stages are lighter.

    Why it matters:
    The worst stage sets max_device_memory, the slowest sets the step time; the others wait.
    A pipeline's bubble, (p-1)/(v·m+p-1), is reported with the stage figures.

    How to fix:
    Set MindFormers' ``model.model_config.offset`` (layers of stage i = num_layers / pp +
    offset[i]; with interleave per chunk, offset[chunk][stage] of num_layers / (pp·chunks)) to the planned one;
    ``irlint fix`` writes it. The finding gives each stage's peak and FLOPs now and after.

    Example:
    A pp4 run, 8 layers (2 per stage): stage peaks 64.6 / 39.8 / 35.0 / 60.1 MiB; offset [-1, 1, 1, -1]
    makes the worst 59.5 MiB.
    """

    code = "PP001"
    name = "pipeline-stage-imbalance"
    severity = "warning"
    summary = "Moving decoder layers between pipeline stages (offset) lowers the worst stage's memory or FLOPs"
    stages = MEMORY_STAGES
    # a run of several stage files (tests/fixtures/INVALID_RUN): the example test lints it whole
    VALID = [one_op_dump("16, 16")]  # no pipeline
    INVALID = []  # its finding needs a run of stages: INVALID_RUN
    INVALID_RUN = "dryrun/pp4"
    min_files = 2  # one graph is one stage: nothing to balance, and no file is read again

    def check_run(self, run: list[RunFile], config: Config) -> Iterator[Finding]:
        from irlint.accounts.pipeline_plan import bubble, plan_offset, run_stages  # a run of stages only

        stages = run_stages([(r.ir, r.file.rank, r.file.display) for r in run])
        plan = plan_offset(stages)
        if plan is None:
            return
        worst_now, worst_after = max(plan.peak_now), max(plan.peak_after)
        slow_now, slow_after = max(plan.flops_now), max(plan.flops_after)
        if worst_after > worst_now * (1 - THRESHOLD) and slow_after > slow_now * (1 - THRESHOLD):
            return
        worst = max(stages, key=lambda s: s.peak_bytes)
        at = next(r for r in run if r.file.display == worst.file)
        node = worst.node if worst.node is not None else next(iter(at.ir.cnodes()), None)
        if node is None:
            return
        p, m = len(stages), stages[0].micro_batches
        share = bubble(p, stages[0].chunks, m)
        now = "; ".join(
            _stage_text(s.index, n, b, f) for s, n, b, f in zip(stages, plan.layers_now, plan.peak_now, plan.flops_now)
        )
        after = "; ".join(
            _stage_text(s.index, n, b, f)
            for s, n, b, f in zip(stages, plan.layers_after, plan.peak_after, plan.flops_after)
        )
        yield self.finding(
            at.ir,
            node,
            f"{p} pipeline stages, {m} micro batches (bubble {share:.0%}): the worst stage peaks at "
            f"{human_bytes(worst_now)}, the slowest runs {slow_now / 1e9:.3g} GFLOP per micro batch; offset "
            f"{plan.offset} makes them {human_bytes(worst_after)} and {slow_after / 1e9:.3g} GFLOP. Now: {now}. "
            f"After: {after}.",
            hint=f"set model.model_config.offset: {plan.offset} (irlint fix writes it)",
            cause=f"stages unbalanced: the worst peaks at {human_bytes(worst_now)}, {human_bytes(worst_after)} "
            f"with layers moved",
            fix=f"model.model_config.offset: {plan.offset}",
            identity=(("run", tuple(sorted(str(r.file.display) for r in run))),),
            fixes=Fixes(pipeline=PipelineFix.of(plan.fields())),
            facts={
                "layers_now": plan.layers_now,
                "layers_after": plan.layers_after,
                "micro_batches": m,
                "chunks": stages[0].chunks,
                "bubble": round(share, 4),
                "stage_ranks": [s.ranks for s in stages],
            },
        )
