base:
  '*':
    - proxmox
