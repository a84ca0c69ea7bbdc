"""What a step costs, from a read model: ``memory`` (activations kept for backward) and ``comm``
(bytes each collective receives, scheme and redistribution waste)."""
