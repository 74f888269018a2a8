"""The small neutral package every part imports: expressions, solving, metrics, fitting."""
