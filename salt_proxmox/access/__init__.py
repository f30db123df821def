"""Access control as code: users, groups, API tokens kept in OpenBao, authentication realms
(pve-access-control), and the privileges a declared estate needs (docs/design.md §7)."""
