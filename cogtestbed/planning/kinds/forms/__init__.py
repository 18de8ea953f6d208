"""The forms plan kind: its run, checks, text and writer."""
