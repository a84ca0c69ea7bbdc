"""``irlint config [PATH]``: which config file a lint of PATH uses, and with --show its settings."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..runner.config import ConfigError, to_toml
from .exits import fail
from .options import debug_option, load_config_for


@click.command("config")
@click.option("--show", is_flag=True, help="Print the effective settings as TOML.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False))
@click.argument("path", required=False)
@debug_option
def config_cmd(show, config_file, path):
    """Which config file a lint of PATH uses (found upward from PATH, then from the working directory);
    --show prints its settings, in the layout of that file, and the cache folder and jobs in effect."""
    if path is not None and not os.path.lexists(path):
        fail(f"{path}: no such file or folder")
    try:
        config, source = load_config_for(config_file, path)
    except ConfigError as exc:
        fail(str(exc))
    where = f"# from {source}" if source else "# no irlint.toml or [tool.irlint] found: defaults"
    if show:
        from ..runner.cache import default_dir
        from ..runner.engine import capped_jobs

        table = "tool.irlint" if source is not None and Path(source).name == "pyproject.toml" else ""
        cache = str(default_dir(config.cache_dir)) if config.cache else "off"
        jobs = capped_jobs(config.effective_jobs())
        click.echo(
            f"{where}\n# in effect: cache folder {cache}; up to {jobs} worker process"
            f"{'es' if jobs != 1 else ''}\n{to_toml(config, table)}",
            nl=False,
        )
    else:
        click.echo(where[2:])
