"""Salt loader glue: tells Salt where this distribution's execution and state modules live.

The modules themselves are the files in the repository's ``_modules/`` and ``_states/``
directories. Installed with pip they are packaged as ``saltext_proxmox.modules`` and
``saltext_proxmox.states``; synced from ``file_roots`` they are the same files.
"""
