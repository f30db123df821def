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
{#-
  Pillar shapes. Each section below is a mapping of entries, each entry a mapping of keys. A section
  or an entry of another shape (a YAML list, a bare string) becomes one failing state that names the
  pillar key and the shape it needs: never a template traceback, never an entry passed on half-read,
  never a run that silently does nothing. An empty section (`lxc:` with nothing under it) is no entry.
-#}
{%- macro shape(value) -%}
{%-   if value is mapping %}a mapping{% elif value is string %}a string{% elif value is boolean %}a boolean
{%-   elif value is number %}a number{% elif value is none %}empty{% elif value is sequence %}a list
{%-   else %}a {{ value.__class__.__name__ }}{% endif -%}
{%- endmacro %}
{%- set shape_errors = [] %}
{%- set proxmox = salt['pillar.get']('proxmox', {}) %}
{%- if proxmox is not mapping and proxmox is not none %}
{%-   do shape_errors.append({'id': 'proxmox-pillar', 'key': 'proxmox', 'text':
        'pillar proxmox is ' ~ shape(proxmox) ~ ', not a mapping of sections (targets, lxc, '
        ~ 'firewall_aliases, pools, roles, acls): write each section as a key under proxmox:, as '
        ~ 'pillar_examples/proxmox.sls does. Nothing was written.'}) %}
{%- endif %}
{%- set sections = {} %}
{%- for path, prefix, what in [
      ('proxmox:lxc', 'proxmox-lxc-', 'container (vmid, node, ostemplate, ...)'),
      ('openbao:policies', 'openbao-policy-', 'policy (fragments, ...)'),
      ('proxmox:firewall_aliases', 'proxmox-firewall-alias-', 'firewall alias (cidr, comment, ...)'),
      ('proxmox:pools', 'proxmox-pool-', 'pool (comment, ...)'),
      ('proxmox:roles', 'proxmox-role-', 'role (privs, ...)'),
      ('proxmox:acls', 'proxmox-acl-', 'ACL entry (path, role, ...)')] %}
{%-   set raw = salt['pillar.get'](path, {}) %}
{%-   set clean = {} %}
{%-   if raw is mapping %}
{%-     for key, value in raw | dictsort %}
{%-       if value is mapping %}
{%-         do clean.update({key: value}) %}
{%-       else %}
{%-         do shape_errors.append({'id': prefix ~ key, 'key': path ~ ':' ~ key, 'text':
              'pillar ' ~ path ~ ':' ~ key ~ ' is ' ~ shape(value) ~ ', not a mapping: declare the '
              ~ what ~ ' as keys under it, as pillar_examples/proxmox.sls does. Nothing was written.'}) %}
{%-       endif %}
{%-     endfor %}
{%-   elif raw is not none %}
{%-     do shape_errors.append({'id': prefix ~ 'pillar', 'key': path, 'text':
          'pillar ' ~ path ~ ' is ' ~ shape(raw) ~ ', not a mapping of state id to ' ~ what
          ~ ': write each entry as `<state id>: {keys}`, as pillar_examples/proxmox.sls does. '
          ~ 'Nothing was written.'}) %}
{%-   endif %}
{%-   do sections.update({path: clean}) %}
{%- endfor %}
{%- for error in shape_errors %}
{{ error.id }}:
  test.configurable_test_state:
    - name: {{ ('pillar ' ~ error.key) | tojson }}
    - changes: false
    - result: false
    - allow_test_mode_failure: true
    - comment: {{ error.text | tojson }}
{%- endfor %}

{%- set containers = sections['proxmox:lxc'] %}

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
{%- set policies = sections['openbao:policies'] %}
{%- set aliases = sections['proxmox:firewall_aliases'] %}
{%- set pools = sections['proxmox:pools'] %}
{%- set roles = sections['proxmox:roles'] %}
{%- set acls = sections['proxmox:acls'] %}

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
