"""OpenBao: the hvac client, PVE credential minting, and (later) policy management."""
