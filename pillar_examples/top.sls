base:
  '*':
    - proxmox
    - secrets
