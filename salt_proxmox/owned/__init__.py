"""What this minion owns, across every family (``proxmox.owned``): which ownership rows a run's
declarations name (``declared``) and whether each row's live object is still the one it speaks for
(``check``). It sits above the families, reading each through ``salt_proxmox.registry``; the rows and
their report are ``salt_proxmox.ownership``."""
