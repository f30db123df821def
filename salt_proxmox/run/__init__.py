"""One state run, shared by every family: the per-target context its calls make (``context``), what
the run learned once for all its states (``memo``), the run as Salt hands it (``lowstate``), the
context built from Salt-shaped configuration (``config``) and the one skin of every state function
(``skin``). Imports nothing from ``guest/`` or a family."""
