"""``irlint clean``: empty the cache of lint results."""

from __future__ import annotations

import os

import click

from ..runner.config import ConfigError, load_config
from .exits import fail
from .options import debug_option


@click.command("clean")
@click.option("--config", "config_file", type=click.Path(dir_okay=False))
@click.option("--cache-dir", type=click.Path(file_okay=False), help="The cache folder to empty.")
@debug_option
def clean_cmd(config_file, cache_dir):
    """Empty the cache of lint results (the folder of --cache-dir, cache-dir, $IRLINT_CACHE_DIR or the
    user cache folder)."""
    from ..runner.cache import TAG_NAME, LintCache, default_dir

    try:
        config, _ = load_config(config_file, starts=[os.getcwd()])
    except ConfigError as exc:
        fail(str(exc))
    folder = default_dir(cache_dir or config.cache_dir)
    if not os.path.lexists(folder):
        click.echo(f"irlint: no cache at {folder}: nothing to remove", err=True)
        return
    if not folder.is_dir():
        fail(f"{folder}: not a folder; left alone")
    store = LintCache(folder)
    if not store.looks_like_cache():
        if any(folder.iterdir()):
            fail(
                f"{folder} does not look like irlint's cache (no {TAG_NAME} written by irlint, no cache "
                f"entries): left alone"
            )
        click.echo(f"irlint: {folder} is empty: nothing to remove", err=True)
        return
    removed, others = store.clear()
    left = f"; {others} other file{'s' if others != 1 else ''} left alone" if others else ""
    click.echo(f"irlint: removed {removed} cache entr{'ies' if removed != 1 else 'y'} from {folder}{left}", err=True)
