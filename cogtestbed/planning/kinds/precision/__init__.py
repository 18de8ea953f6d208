"""The precision plan kind: its run, checks, text and writer."""
