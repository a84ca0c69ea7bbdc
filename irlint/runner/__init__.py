"""Running a lint: ``discover`` finds the dumps, ``dedup`` groups those that hold the same graph,
``engine`` reads one of each and runs the rules (``config``, ``cache``, ``baseline``); ``diff`` compares
two runs."""
