"""Trial tables of the example package."""
