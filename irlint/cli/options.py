"""What several commands share of their options: --debug, --follow-links, rule selectors, and the
config a lint uses with the command-line options over it."""

from __future__ import annotations

import os

import click

from ..runner.config import Config, ConfigError, check_selectors, load_config

_debug = False


class Command(click.Command):
    """A click command whose short options (``-q``, ``-o FILE``) cost no spelling suggestions: click
    tries each as a long option first, and the error it builds on the way (then dropped, since the
    short option matches) imports difflib and ranks every long option, ~1 ms of each lint. An
    unknown long option is still reported with its suggestions."""

    def make_parser(self, ctx):
        parser = super().make_parser(ctx)
        match_long = getattr(parser, "_match_long_opt", None)
        prefixes = getattr(parser, "_opt_prefixes", None)
        long_opts = getattr(parser, "_long_opt", None)
        if match_long is None or prefixes is None or long_opts is None:  # another click: as it is
            return parser

        def match_long_or_short(opt, explicit_value, state):
            if opt not in long_opts and opt[:2] not in prefixes:
                # click goes on to the short options with this argument: no suggestions needed
                raise click.NoSuchOption(opt, ctx=ctx)
            return match_long(opt, explicit_value, state)

        vars(parser)["_match_long_opt"] = match_long_or_short  # this parser only
        return parser


def debugging() -> bool:
    """Whether this run shows tracebacks of internal errors (--debug)."""
    return _debug


def reset_debug() -> None:
    global _debug
    _debug = False  # --debug of one run must not outlive it (tests, API users run several)


def _set_debug(ctx, param, value):
    global _debug
    _debug = _debug or bool(value)
    return value


debug_option = click.option(
    "--debug",
    is_flag=True,
    expose_value=False,
    callback=_set_debug,
    is_eager=True,
    help="Show tracebacks of internal errors.",
)
follow_links_option = click.option(
    "-L",
    "--follow-links",
    is_flag=True,
    help="Follow every link to a folder (as find -L). Without it, a link out of the named folder is followed "
    "only when its target holds graph IR dumps or rank_N/ folders.",
)

# The report options of the commands that write one
format_option = click.option(
    "--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True
)
output_option = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the report to this file instead of standard output (its folder is created).",
)


account_color_option = click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the text tables (auto: on a terminal, unless NO_COLOR; FORCE_COLOR forces it).",
)
account_quiet_option = click.option(
    "-q", "--quiet", is_flag=True, help="Only the figures: no notes on what is counted and what is not."
)


def top_option(help: str):
    return click.option("--top", "top", type=click.IntRange(min=0), default=10, show_default=True, help=help)


# The options of the commands that lint: the config file, the rule selectors, the cache
def config_file_option(start: str):
    return click.option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False),
        help=f"Use this irlint.toml or pyproject.toml instead of the one found upward from {start}.",
    )


no_cache_option = click.option("-n", "--no-cache", is_flag=True, help="Do not read or write the cache of lint results.")


def split_values(ctx, param, values) -> list[str] | None:
    """Repeated and comma-separated values: --select RC001,RC002 --select PC. An option given
    with nothing in it (`--select ""`) is a usage error, as in ruff: it must not mean "the defaults"."""
    if not values:
        return []
    out = [v.strip() for value in values for v in value.split(",") if v.strip()]
    if not out:
        raise click.BadParameter("empty rule selector (give a rule code, prefix, name or ALL)")
    return out


select_option = click.option("--select", multiple=True, callback=split_values, help="Only these rules (as for a lint).")
extend_select_option = click.option(
    "--extend-select", multiple=True, callback=split_values, help="Rules to add to the selection."
)
ignore_option = click.option("--ignore", multiple=True, callback=split_values, help="Rules to leave out.")


def load_config_for(config_file, path):
    """The config a lint of PATH uses: --config, else the first found upward from PATH, then from the
    working directory (`irlint config PATH` shows the same)."""
    return load_config(config_file, starts=[path, os.getcwd()] if path else [os.getcwd()])


def apply_options(
    config: Config, select, extend_select, ignore, all_stages, jobs, no_cache, cache_dir=None, rule_timeout=None
) -> None:
    """Command-line options over the config file: --select replaces the file's whole selection (as in
    ruff), then --extend-select/--ignore add."""
    if select:
        config.select, config.extend_select, config.ignore = list(select), [], []
    config.extend_select += list(extend_select)
    config.ignore += list(ignore)
    if all_stages:
        config.all_stages = True
    if jobs is not None:
        config.jobs = jobs
    if no_cache:
        config.cache = False
    if cache_dir:
        config.cache_dir = cache_dir
    if rule_timeout is not None:
        config.rule_timeout = rule_timeout


def check_option_selectors(known: list, **options) -> None:
    for key, values in options.items():
        try:
            check_selectors(Config(select=list(values)), known)
        except ConfigError as exc:  # name the option, not the config key
            raise ConfigError(f"--{key.replace('_', '-')}{str(exc)[len('select') :]}") from None
