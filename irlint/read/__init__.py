"""Reading a dump: ``scanner`` cuts the text into records, ``record`` and ``syntax`` parse them into
``values`` (with the Lark grammar loaded by ``parser``, trees turned into values by ``tree_values``,
each shape parsed once by the memo of ``templates``), ``assemble`` builds the model, ``reader``
drives the three."""
