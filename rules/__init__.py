"""irlint's built-in rules: one module per rule or small family."""
