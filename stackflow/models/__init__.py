"""Pure data models shared by workflows, activities and watchers (no I/O)."""
