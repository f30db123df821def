"""Node network interfaces and the network reload that applies them (docs/design.md §7b)."""
