"""Redistribution rules (PC): communication that tensor redistribution inserts under semi/auto
parallel, and whether it is waste.

What the dump says, one module per question: ``chain`` (what a chain is and the ops it may hold),
``layouts`` (shard layouts from ``in_strategy``), ``discovery`` (the runs of redistribution ops
between compute ops), ``steps`` and ``simulation`` (what each step moves and discards),
``fix_search`` (the one-op strategy change that makes two neighbours agree) and ``wording`` (how
ops and values read in a finding). Each rule is one small module reading them:
``redundant_chain`` (PC001), ``full_gather`` (PC002).
"""
