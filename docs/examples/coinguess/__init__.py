"""coin-guess: an experiment defined outside cogtestbed, from the names of :mod:`cogtestbed.extend`.

A coin that favours heads (P(heads) = 0.7) or tails (0.3), equally likely, is flipped ``n_flips``
times; the subject sees the number of heads and guesses which coin it was (1: the heads coin).
The Bayes-optimal guess follows the log-odds L = (2k − n)·log(0.7/0.3); the model ``softmax``
guesses "heads coin" with probability σ(β·L) (β ≥ 0, at most 100; β = 1 is Bayes-optimal
probability matching).  Everything here is made up for the walk-through (CONTRIBUTING.md).
"""
