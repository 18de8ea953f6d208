"""The adaptive plan kind: its run, checks, text and writer."""
