"""The power plan kind: its run, checks, text and writer."""
