base:
  '*':
    - proxmox
    - secrets
{%- if salt['config.get']('proxmox:pbs_targets') %}
    - pbs
{%- endif %}
{%- if salt['config.get']('proxmox:targets', {}).values() | selectattr('root_lane', 'defined') | list %}
    - node
{%- endif %}
