"""What containers and VMs share: reading a guest's config with its pending section."""
