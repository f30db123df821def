{#-
  proxmox formula: turns pillar into salt-proxmox states.

  pillar proxmox:lxc:<state id>   one container each; its keys are the arguments of
                                  proxmox_lxc.present (vmid, node, target, adopt, removal and
                                  PVE config keys spelled as PVE spells them).
                                  `ensure: absent` declares it gone instead (removal: retain
                                  forgets it, removal: destroy deletes it).

  Targets (proxmox:targets) and OpenBao (openbao) are read by the modules with config.get, so
  they may live in the minion config or in pillar.
-#}
{%- set containers = salt['pillar.get']('proxmox:lxc', {}) %}

{%- for state_id, declared in containers | dictsort %}
{%-   set declared = declared if declared is mapping else {'invalid_declaration': declared} %}
{%-   set ensure = declared.get('ensure', 'present') %}
proxmox-lxc-{{ state_id }}:
{%-   if ensure == 'absent' %}
  proxmox_lxc.absent:
    - name: {{ state_id | tojson }}
{%-     for key in ['vmid', 'node', 'target', 'removal'] if key in declared %}
    - {{ key }}: {{ declared[key] | tojson }}
{%-     endfor %}
{%-   else %}
  proxmox_lxc.present:
    - name: {{ state_id | tojson }}
{%-     for key, value in declared | dictsort if key != 'ensure' %}
    - {{ key }}: {{ value | tojson }}
{%-     endfor %}
{%-   endif %}
{%- endfor %}
