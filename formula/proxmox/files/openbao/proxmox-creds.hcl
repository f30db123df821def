# salt-proxmox mints its PVE API tokens here, one secret per role (read, provision):
# GET proxmox/creds/<role> -> {token_id, secret} with a lease.
path "proxmox/creds/*" {
  capabilities = ["read"]
}
