"""Recall stages: analyze, retrieve, expand, rank, truncate."""
