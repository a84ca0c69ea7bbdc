"""Reading a dump: ``scanner`` cuts the text into records, ``record`` and ``syntax`` (the Lark
grammar) parse them into ``values``, ``assemble`` builds the model, ``reader`` drives the three."""
