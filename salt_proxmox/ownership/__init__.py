"""Who made what (docs/design.md §8): the rows and their rules (``rows``), where they are kept
(``stores``, ``files``), their index by state (``index``) and the one keeper that reads and changes
them (``keeper.Ownership``). Imports nothing from ``guest/`` or a family."""
