base:
  '*':
    - proxmox
    - secrets
{%- if salt['config.get']('proxmox:pbs_targets') %}
    - pbs
{%- endif %}
