"""OpenBao resource families: ACL policies (``policy`` pure rules, ``lifecycle`` calls).

``salt_proxmox.openbao`` is the client side (login, credential minting); this package holds
what the states declare in OpenBao.
"""
