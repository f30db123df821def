# salt-proxmox mints its PVE API tokens here, one secret per role (read, provision):
# GET proxmox/creds/<role> -> {token_id, secret} with a lease.
path "proxmox/creds/*" {
  capabilities = ["read"]
}

# A pbs storage wired to a PBS datastore keeps its PBS token's secret here (KV version 2).
path "secret/data/salt-proxmox/pbs/*" {
  capabilities = ["create", "read", "update"]
}
