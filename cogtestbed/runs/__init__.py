"""Analyses of LLM runs: paired comparisons, the CogBench phenotype, short sessions on a real local model."""
