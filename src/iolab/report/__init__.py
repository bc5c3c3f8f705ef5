"""Presenting results: terminal tables, JSON documents, HTML. Never recomputes statistics."""
