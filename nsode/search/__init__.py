"""NSODE proposes, a fitter decides: the search behind `nsode-eps+refine` and `nsode predict`.

One job per module, in the order a record flows (docs/search.md is the design record):
`terms` (an expression read as a sum of terms, its skeleton), `integral_fits` (stage 1's batched
linear fits on the integral form) and `denominators` (a fitted denominator, measured and not kept)
serve `proposals` (stage 1: the beam's expressions as skeletons, all scored at once); `funnel`
(stages 2 and 3: the best skeletons fitted, then refitted on the integrated trajectory; the
`search` entry point); `fits` (a fitted candidate and what is measured of it); `choice` (stage 4:
the safe, parsimonious pick); `digits` (the pick printed to the digits the data support);
`settings` (every budget and rule, in one dataclass). The constants are fitted by
odecore.fitting, which the ProGED-style baseline shares; nothing here imports torch.
"""
