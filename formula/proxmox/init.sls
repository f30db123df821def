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

{#-
  The simple objects and OpenBao policies. Each section is a mapping; its key is the object's
  name unless the entry says `name:`, and `ensure: absent` declares it gone instead.

  openbao:policies:<name>          openbao_policy: fragments (inline HCL or salt:// files, in
                                   order), adopt, removal, rename_from. Rendered first, and
                                   required by every PVE state below: those mint their PVE
                                   credentials from OpenBao.
  proxmox:firewall_aliases:<name>  proxmox_firewall_alias: cidr, comment, target, adopt,
                                   rename_from.
  proxmox:pools:<poolid>           proxmox_pool: comment, target, adopt (removal for absent).
  proxmox:roles:<roleid>           proxmox_role: privs, target, adopt (removal for absent).
  proxmox:acls:<label>             proxmox_acl: path, role, user|group|token, propagate, target,
                                   adopt. Requires the role (and the pool of a /pool/<id> path)
                                   when this pillar declares it.
-#}
{%- set policies = salt['pillar.get']('openbao:policies', {}) %}
{%- set aliases = salt['pillar.get']('proxmox:firewall_aliases', {}) %}
{%- set pools = salt['pillar.get']('proxmox:pools', {}) %}
{%- set roles = salt['pillar.get']('proxmox:roles', {}) %}
{%- set acls = salt['pillar.get']('proxmox:acls', {}) %}

{#- Every PVE state of this file, as requisite entries, so the policies can be required by them. #}
{%- set pve_states = [] %}
{%- for key in containers | sort %}{% do pve_states.append({'proxmox_lxc': 'proxmox-lxc-' ~ key}) %}{% endfor %}
{%- for key in aliases | sort %}{% do pve_states.append({'proxmox_firewall_alias': 'proxmox-firewall-alias-' ~ key}) %}{% endfor %}
{%- for key in pools | sort %}{% do pve_states.append({'proxmox_pool': 'proxmox-pool-' ~ key}) %}{% endfor %}
{%- for key in roles | sort %}{% do pve_states.append({'proxmox_role': 'proxmox-role-' ~ key}) %}{% endfor %}
{%- for key in acls | sort %}{% do pve_states.append({'proxmox_acl': 'proxmox-acl-' ~ key}) %}{% endfor %}

{%- macro arguments(declared, skip) %}
{%-   for key, value in declared | dictsort if key not in skip %}
    - {{ key }}: {{ value | tojson }}
{%-   endfor %}
{%- endmacro %}

{%- for key, declared in policies | dictsort %}
{%-   set declared = declared if declared is mapping else {'invalid_declaration': declared} %}
{%-   set absent = declared.get('ensure') == 'absent' %}
openbao-policy-{{ key }}:
  openbao_policy.{{ 'absent' if absent else 'present' }}:
    - name: {{ declared.get('name', key) | tojson }}
{%-   if absent %}
{{-     arguments(declared, ['ensure', 'name', 'fragments', 'adopt', 'rename_from']) }}
{%-   else %}
{{-     arguments(declared, ['ensure', 'name']) }}
{%-   endif %}
{%-   if pve_states %}
    - require_in: {{ pve_states | tojson }}
{%-   endif %}
{%- endfor %}

{%- for key, declared in aliases | dictsort %}
{%-   set declared = declared if declared is mapping else {'invalid_declaration': declared} %}
{%-   set absent = declared.get('ensure') == 'absent' %}
proxmox-firewall-alias-{{ key }}:
  proxmox_firewall_alias.{{ 'absent' if absent else 'present' }}:
    - name: {{ declared.get('name', key) | tojson }}
{{-   arguments(declared, ['ensure', 'name', 'cidr', 'comment', 'adopt', 'rename_from'] if absent else ['ensure', 'name']) }}
{%- endfor %}

{%- for key, declared in pools | dictsort %}
{%-   set declared = declared if declared is mapping else {'invalid_declaration': declared} %}
{%-   set absent = declared.get('ensure') == 'absent' %}
proxmox-pool-{{ key }}:
  proxmox_pool.{{ 'absent' if absent else 'present' }}:
    - name: {{ declared.get('name', key) | tojson }}
{{-   arguments(declared, ['ensure', 'name', 'comment', 'adopt'] if absent else ['ensure', 'name', 'removal']) }}
{%- endfor %}

{#- roleid -> state id, so an ACL can require the role it names. #}
{%- set role_states = {} %}
{%- for key, declared in roles | dictsort %}
{%-   set declared = declared if declared is mapping else {'invalid_declaration': declared} %}
{%-   do role_states.update({declared.get('name', key): 'proxmox-role-' ~ key}) %}
{%-   set absent = declared.get('ensure') == 'absent' %}
proxmox-role-{{ key }}:
  proxmox_role.{{ 'absent' if absent else 'present' }}:
    - name: {{ declared.get('name', key) | tojson }}
{{-   arguments(declared, ['ensure', 'name', 'privs', 'adopt'] if absent else ['ensure', 'name', 'removal']) }}
{%- endfor %}

{%- for key, declared in acls | dictsort %}
{%-   set declared = declared if declared is mapping else {'invalid_declaration': declared} %}
{%-   set absent = declared.get('ensure') == 'absent' %}
{%-   set needs = [] %}
{%-   if declared.get('role') in role_states and not absent %}
{%-     do needs.append({'proxmox_role': role_states[declared.get('role')]}) %}
{%-   endif %}
{%-   set pool = (declared.get('path') or '') | regex_replace('^/pool/', '') %}
{%-   if (declared.get('path') or '').startswith('/pool/') and pool in pools and not absent %}
{%-     do needs.append({'proxmox_pool': 'proxmox-pool-' ~ pool}) %}
{%-   endif %}
proxmox-acl-{{ key }}:
  proxmox_acl.{{ 'absent' if absent else 'present' }}:
    - name: {{ key | tojson }}
{{-   arguments(declared, ['ensure', 'name', 'propagate', 'adopt'] if absent else ['ensure', 'name', 'removal']) }}
{%-   if needs %}
    - require: {{ needs | tojson }}
{%-   endif %}
{%- endfor %}
