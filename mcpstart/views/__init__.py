"""Views of a results file: tables (later exports, plots, comparisons)."""
