"""Device-memory rule (DM): a rank whose predicted peak of device memory does not fit the budget."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from irlint.accounts.memory import MEMORY_STAGES
from irlint.rule import Invalid, Says
from irlint.run_rule import RunFile, RunRule
from irlint.units import human_bytes

if TYPE_CHECKING:  # the device account is loaded by a lint that gives a budget only
    from irlint.accounts.device import DevicePeak
    from irlint.findings import Finding
    from irlint.model import IRFile
    from irlint.runner.config import Config

# the budget the examples run with
EXAMPLE_BUDGET = 1024**2


def one_op_dump(shape: str) -> str:
    """A dump of one Mul of an input and a weight of ``shape`` (the examples of the device rules)."""
    return f"""\
# IR entry: @g
# Total subgraphs: 1

# Total params: 2
# Params:
%para1_x: <Tensor[Float32], ({shape})> : [{shape}]
%para2_w: <Ref[Tensor[Float32]], ({shape}), ref_key=w>  :  has_default
Node counting information:
Total number of nodes: 5
Total number of cnodes: 2
subgraph attr:
subgraph instance: g : 0x55860104edc0
subgraph @g() {{
  %0(out) = PrimFunc_Mul(%para1_x, %para2_w) {{instance name: mul}}
      : (<Tensor[Float32], ({shape})>, <Ref[Tensor[Float32]], ({shape})>) -> (<Tensor[Float32], ({shape})>)
      # Fullname with scope: (Default/network-Net/Mul-op0)
  Return(%0)
      : (<Tensor[Float32], ({shape})>)
      # Fullname with scope: (Default/Return-op0)
}}
"""


def _dp_size(ir: IRFile) -> int:
    """The data-parallel group the gradients are reduced over: the largest rank_size of a gradient
    AllReduce (or ReduceScatter), 1 when none."""
    best = 1
    for k in ir.nodes_by_op("AllReduce", "ReduceScatter"):
        d = ir[k]
        if not (ir.is_backward(k) or "Mirror" in d.get("scope", "") or d["graph"] == ir.entry):
            continue
        size = (d.get("primitive_attrs") or {}).get("rank_size")
        if isinstance(size, int) and size > best:
            best = size
    return best


def _optimizer_parallel(ir: IRFile) -> bool:
    return any("parallel_optimizer" in str(ir[k].get("instance", "")) for k in ir.nodes_by_op("AllGather"))


def ways_down(ir: IRFile, peak: DevicePeak) -> list[dict[str, Any]]:
    """The cheapest ways to lower this rank's peak, each priced: ``{"way", "saves_bytes", "costs", "how"}``,
    the most bytes first."""
    from irlint.accounts.compute import account as cost_account
    from irlint.accounts.device import peak_with_full_recompute
    from irlint.accounts.memory import cached_account

    out = []
    report = cached_account(ir)
    layers = [r for r in report.layers() if r.layer.isdigit()]
    saves = peak.bytes - peak_with_full_recompute(ir, report) if layers else 0
    if saves > 0:
        cost = {r.layer: r for r in cost_account(ir, keys=False).layers()}
        forward = sum(cost[r.layer].forward_flops for r in layers if r.layer in cost)
        # the layers' kept tensors and weight copies rebuilt in backward, for one more forward
        out.append(
            {
                "way": "recompute",
                "saves_bytes": saves,
                "costs": f"{forward / 1e9:.3g} GFLOP more per micro batch (one more forward of {len(layers)} layers)",
                "how": "recompute_config: recompute: True (or select_recompute the largest ops, see irlint cost)",
            }
        )
    if not _optimizer_parallel(ir):
        dp = _dp_size(ir)
        sharded = peak.parts.get("optimizer_states", 0) + peak.parts.get("parameters", 0)
        if dp > 1 and sharded:
            out.append(
                {
                    "way": "optimizer parallel",
                    "saves_bytes": sharded * (dp - 1) // dp,
                    "costs": "an AllGather of each weight in forward and a ReduceScatter of its gradient",
                    "how": f"parallel: enable_parallel_optimizer: True (shards the weights and states {dp} ways)",
                }
            )
    return sorted(out, key=lambda w: -w["saves_bytes"])


class DeviceMemoryOverBudget(RunRule):
    """What it finds:
    A rank whose predicted peak of used device memory (``irlint memory``'s device peak:
    parameters, optimizer states, accumulation buffers, constants, the weight copies and activations of the
    micro batches in flight, the temporaries alive at the peak) exceeds the budget, ``--max-device-memory``
    (MindSpore's ``max_device_memory``: ``58GB``).

    Why it matters:
    The run stops with an out-of-memory error on that device after the whole compile, often
    minutes into a cluster job. The tuning guide suggests 58GB (54GB on a thousand cards).

    How to fix:
    The finding lists what takes the space and the cheapest ways down, priced: recompute (bytes
    freed, FLOPs added), optimizer parallel where it is off (bytes freed), and on a pipeline stage the
    ``offset`` that moves layers away (pipeline-stage-imbalance plans it).

    Example:
    A pipeline's first stage holds 4 micro batches' activations and weight copies: 64.6 MiB against
    a 61.4 MiB budget.
    """

    code = "DM001"
    name = "device-memory-over-budget"
    severity = "error"
    summary = "A rank's predicted peak of device memory exceeds max_device_memory"
    stages = MEMORY_STAGES
    EXAMPLE_CONFIG = {"max_device_memory": EXAMPLE_BUDGET}
    needs = "--max-device-memory"
    # a 1 MiB weight and its 1 MiB product alive at once
    INVALID = [
        Invalid(
            one_op_dump("512, 512"), Says("%0", "predicted device peak 2.00 MiB over max_device_memory by 1.00 MiB")
        )
    ]
    VALID = [one_op_dump("16, 16")]

    def wants_run(self, config: Config) -> bool:
        return bool(getattr(config, "max_device_memory", None))

    def settings(self, config: Config) -> tuple[object, ...]:
        return (getattr(config, "max_device_memory", None),)

    def check_run(self, run: list[RunFile], config: Config) -> Iterator[Finding]:
        from irlint.accounts.device import device_peak
        from irlint.accounts.pipeline_plan import plan_offset, run_stages

        budget = getattr(config, "max_device_memory", None)
        if not budget:
            return
        stages = run_stages([(r.ir, r.file.rank, r.file.display) for r in run])
        by_path = {s.file: s for s in stages}
        plan = plan_offset(stages)
        for r in run:
            ir = r.ir
            peak = device_peak(ir)
            if peak.bytes <= budget:
                continue
            node = peak.node if peak.node is not None else next(iter(ir.cnodes()), None)
            if node is None:
                continue
            stage = by_path.get(r.file.display)
            where = f"rank {r.file.rank}" if r.file.rank is not None else "this rank"
            if stage is not None:
                where += f" (pipeline stage {stage.index})"
            over = peak.bytes - budget
            parts = sorted(((v, k) for k, v in peak.parts.items() if v), reverse=True)
            ways = ways_down(ir, peak)
            if plan is not None and stage is not None:
                after = plan.peak_after[stage.index]
                if after < peak.bytes:
                    ways.append(
                        {
                            "way": "offset",
                            "saves_bytes": peak.bytes - after,
                            "costs": f"layers per stage {plan.layers_now} -> {plan.layers_after}",
                            "how": f"model.model_config.offset: {plan.offset}",
                        }
                    )
                    ways.sort(key=lambda w: -w["saves_bytes"])
            hint = "; ".join(f"{w['way']}: -{human_bytes(w['saves_bytes'])} ({w['costs']}; {w['how']})" for w in ways)
            yield self.finding(
                ir,
                node,
                cause=f"predicted device peak {human_bytes(peak.bytes)} over max_device_memory by {human_bytes(over)}",
                fix=ways[0]["how"] if ways else "",
                message=f"{where}: predicted device peak {human_bytes(peak.bytes)} exceeds max_device_memory "
                f"{human_bytes(budget)} by {human_bytes(over)}; the space: "
                + ", ".join(f"{k.replace('_', ' ')} {human_bytes(v)}" for v, k in parts[:4]),
                hint=("Cheapest ways down: " + hint) if hint else "",
                identity=(("rank", r.file.rank),),
                facts={
                    "device_peak_bytes": peak.bytes,
                    "max_device_memory_bytes": budget,
                    "over_bytes": over,
                    "device_peak_parts": dict(peak.parts),
                    "ways_down": ways,
                },
            ).with_(file=r.file.display)  # ranks of one graph share its model: each finding is its own rank's
