"""Defaults of ``compare`` (import-light: the CLI's parser reads them for --help)."""

#: Bootstrap resamples of a paired interval.
DEFAULT_RESAMPLES = 1000
#: The bootstrap's seed: the same inputs give the same interval every run.
DEFAULT_SEED = 20261204
#: The interval's confidence.
CONFIDENCE = 0.95
#: Regressions listed (the worst first); ``regressions_total`` counts them all.
DEFAULT_REGRESSIONS = 20
