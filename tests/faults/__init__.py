"""The fault matrix: the real container states against fakepve and a real OpenBao dev server, under the
faults each can meet (failed and malformed reads, refused and uncertain writes, broken credentials, bad
input and badly shaped pillar). ``matrix.py`` holds the table, ``harness.py`` the fault helpers, and
``python -m tests.faults.matrix --markdown`` prints ``docs/reliability.md``."""
