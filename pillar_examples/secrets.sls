# Create secrets, in a pillar file of their own so that they can be kept apart: readable by root
# only, encrypted with Salt's gpg renderer (a first line of #!yaml|gpg and -----BEGIN PGP MESSAGE-----
# values), or rendered from OpenBao. Salt merges this into proxmox.sls's pillar (top.sls names both).
#
# password and ssh-public-keys (one OpenSSH key per line) go with the container's create only: they
# are never shown in a plan or a return, never kept in grains and never compared afterwards (PVE
# never reads them back). Changing one later changes nothing on a container that exists.
proxmox:
  lxc:
    web:
      password: change-me-at-first-login
  # A VM's cloud-init password: sent, never shown (PVE keeps a hash and answers **********), so it is
  # compared only as set or not set. To write a new one, change it here and bump cipassword_serial
  # in proxmox.sls.
  qemu:
    app:
      cipassword: lab-only-4Hk9-cloud-init
  # An InfluxDB metric server's token: sent at create and when its secret_serial changes, never shown;
  # PVE keeps it apart and never reads it back.
  metric_servers:
    influx:
      token: lab-influx-token-5Xq2
  # An ACME DNS plugin's API settings (KEY=value lines, or a mapping): sent base64url at create and
  # when its secret_serial changes; never compared or shown.
  acme:
    plugins:
      lab-dns:
        data:
          CF_Token: lab-cf-token-8Lm3
          CF_Account_ID: lab-account
  # An SMTP notification endpoint's password: sent at create and when its secret_serial changes, never
  # shown; PVE keeps it in priv/notifications.cfg and never reads it back.
  notifications:
    endpoints:
      ops-mail:
        password: lab-smtp-Pass-3Rt8
  # A user's password (pve realm): sent with the create only; PVE lets no API token change it later.
  users:
    ci@pve:
      password: ci-account-Pass-7
