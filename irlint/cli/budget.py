"""``--max-device-memory SIZE`` (``irlint memory``, ``irlint check``): the device budget, given in MindSpore's
``max_device_memory`` syntax or read from a MindFormers config's ``context.max_device_memory``."""

from __future__ import annotations

import click

from .exits import fail, read_or_fail

budget_option = click.option(
    "--max-device-memory",
    "max_device_memory",
    metavar="SIZE",
    help="The device memory each rank may use, as MindSpore's max_device_memory (58GB, 0.5GB); "
    "default: context.max_device_memory of the --config file, if it sets one.",
)


def budget_of(given: str | None, config: str | None) -> int | None:
    """The budget in bytes, or None when neither the option nor the config gives one; exits 2 on bad input."""
    from ..accounts.device import config_device_memory, parse_device_memory

    where = "--max-device-memory"
    if given is None and config is not None:
        try:
            given = config_device_memory(read_or_fail(config, "the config"))
        except ValueError as exc:
            fail(f"{config} {exc}")
        where = f"{config}: context.max_device_memory"
    if given is None:
        return None
    try:
        return parse_device_memory(given)
    except ValueError as exc:
        fail(f"{where}: {exc}")
