"""Test harness: a seeded fake PVE cluster and a dev OpenBao server, for tests and the demo."""
