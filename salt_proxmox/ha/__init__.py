"""High availability (pve-ha-manager): HA resources (``resource``), PVE 8's HA groups (``group``) and
PVE 9's HA rules (``rule``), each a simple object family. The rule that a guest under HA has its
power state owned by HA is the guest lifecycle's (``guest.ha_owned``)."""
