"""What containers and VMs share: one guest lifecycle driven by a family (``family.Family``), the
context of a run, the pending section, identity and fingerprints, destroy refusals."""
