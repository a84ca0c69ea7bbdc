"""Running a lint: ``discover`` finds the dumps (``streams`` opens them), ``plan`` chooses the stage files each rule
reads, ``check`` checks them (``same_graph`` and ``dedup``: files that hold the same graph are read once; ``workers``:
the process pool; ``lint_file``: one file, its rules run in the ``sandbox``), ``engine`` is the API that ties these
together (``config``, ``cache``, ``baseline``); ``diff`` compares two runs."""
