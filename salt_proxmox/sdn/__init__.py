"""SDN zones, vnets and subnets, and the SDN apply (docs/design.md §7b)."""
