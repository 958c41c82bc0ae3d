"""Curriculum: the alpha reward, the difficulty band filter, per-family success statistics."""
