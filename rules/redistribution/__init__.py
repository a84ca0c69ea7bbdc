"""Redistribution rules (PC): communication that tensor redistribution inserts under semi/auto
parallel, and whether it is waste.

``evidence`` holds what the dump says (the runs of redistribution ops between compute ops, what
each step moves and discards, shard layouts from ``in_strategy`` and the one-op strategy change
that makes two neighbours agree); each rule is one small module reading it:
``redundant_chain`` (PC001), ``full_gather`` (PC002).
"""
