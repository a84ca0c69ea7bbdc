"""``--layers N`` / ``--config CONFIG.yaml`` of ``irlint cost`` and ``irlint memory``: the depth
(and the pipeline stages) of the model that runs, given or read from a MindFormers YAML, and each
file's figures projected to it."""

from __future__ import annotations

import click

from .exits import fail, read_or_fail

layers_option = click.option(
    "--layers",
    "layers",
    type=click.IntRange(min=1),
    help="Project the per-layer figures to a model of this many decoder layers (pipeline stages share them).",
)
config_option = click.option(
    "--config",
    "config",
    type=click.Path(dir_okay=False),
    help="Project to the model a MindFormers YAML config describes: model.model_config.num_layers decoder "
    "layers, parallel_config.pipeline_stage stages (instead of --layers).",
)


class Projection:
    """The depth to project to; ``per_stage`` the layers of each pipeline stage when a config says
    them; ``info`` what the JSON states of the config (None without one)."""

    def __init__(self, layers: int | None, per_stage: list[int] | None = None, info: dict | None = None):
        self.layers, self.per_stage, self.info = layers, per_stage, info


def resolve(layers: int | None, config: str | None) -> Projection:
    """``--layers`` or ``--config`` (not both); exits 2 on bad input."""
    if config is None:
        return Projection(layers)
    if layers is not None:
        fail("give the depth with --layers or --config, not both")
    from ..mfyaml import YamlError, depth, stage_layers

    text = read_or_fail(config, "the config")
    try:
        found = depth(text)
    except YamlError as exc:
        fail(f"{config} {exc}")
    per_stage = stage_layers(found.layers, found.stages) if found.stages > 1 else None
    info = {"path": config, "num_layers": found.layers, "pipeline_stage": found.stages, "layers_per_stage": per_stage}
    return Projection(found.layers, per_stage, info)


def project_all(
    entries: list[dict], cases: list[str], layers: int, project, per_stage: list[int] | None = None
) -> None:
    """Each entry's ``projected`` figures for a model of ``layers`` decoder layers; the files of the
    pipeline stages of one run (disjoint layers) share the depth (``stage_depths``; ``per_stage``:
    as a config splits it)."""
    from ..accounts.projection import stage_depths

    runs: dict[str, list[dict]] = {}
    for e, case in zip(entries, cases):
        runs.setdefault(case, []).append(e)
    for run in runs.values():
        sets = [{r["layer"] for r in e["layers"] if str(r["layer"]).isdigit()} for e in run]
        for e, (depth, first) in zip(run, stage_depths(sets, layers, per_stage)):
            e["projected"] = project(e, depth, first)


def project_entries(depth: Projection, entries: list[dict], cases: list[str], project) -> str | None:
    """Each entry's ``projected`` figures at the run's depth (nothing without one); the ``stage_note``."""
    if not depth.layers:
        return None
    project_all(entries, cases, depth.layers, project, depth.per_stage)
    return stage_note(depth, entries, cases)


def stage_note(projection: Projection, entries: list[dict], cases: list[str]) -> str | None:
    """What the run's projection could not take from the config: a config with pipeline stages for a
    dump that shows another number of them (the dump's own split is used)."""
    if not projection.per_stage:
        return None
    from ..accounts.projection import stage_count

    runs: dict[str, list[dict]] = {}
    for e, case in zip(entries, cases):
        runs.setdefault(case, []).append(e)
    shown = {
        stage_count([{r["layer"] for r in e["layers"] if str(r["layer"]).isdigit()} for e in run])
        for run in runs.values()
    }
    wanted = len(projection.per_stage)
    if shown == {wanted}:
        return None
    return (
        f"the config sets {wanted} pipeline stages ({projection.per_stage} layers each) but the dump shows "
        f"{', '.join(map(str, sorted(shown)))}: each file is projected as the dump splits the layers"
    )


def config_json(projection: Projection, note: str | None) -> dict:
    """The JSON's ``config`` block (only with ``--config``): the file, the depth read, the split."""
    if projection.info is None:
        return {}
    return {"config": {**projection.info, **({"note": note} if note else {})}}


def config_text(projection: Projection, note: str | None) -> str:
    """The text report's line on the config the projection reads."""
    if projection.info is None:
        return ""
    i = projection.info
    split = (
        f", {i['pipeline_stage']} pipeline stages of {i['layers_per_stage']} layers" if i["layers_per_stage"] else ""
    )
    return (
        f"Depth from {i['path']}: {i['num_layers']} decoder layers{split}." + (f" Note: {note}." if note else "") + "\n"
    )
