"""The contract every family passes (placeholder, written below)."""
