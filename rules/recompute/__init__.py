"""Recompute rules (RC): did the recompute the user asked for happen, and does it save memory.

``evidence`` holds what the dump says (requested / applied / kept for backward / blocking chain /
cell membership); each rule is one small module reading it: ``not_applied`` (RC001),
``reshape_blocks`` (RC002), ``downcast`` (RC003), ``tag_unused`` (RC004).
"""
