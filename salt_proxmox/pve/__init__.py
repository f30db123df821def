"""The PVE API: HTTP client, typed errors, task polling and the schema checks run before writes."""
