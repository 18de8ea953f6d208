"""Studies of one experiment family's own claims (belief coherence, magnitude estimation, revealed belief)."""
