"""The PVE firewall families: cluster aliases (``alias``, planned by ``lifecycle``)."""
