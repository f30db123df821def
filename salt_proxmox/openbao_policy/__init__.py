"""OpenBao ACL policies, the ``openbao_policy`` family: ``policy`` (the pure rules) and ``lifecycle``
(the calls, plan and apply).

``salt_proxmox.openbao`` is the client side (login, credential minting); this package holds
what the states declare in OpenBao.
"""
