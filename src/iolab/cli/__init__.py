"""Thin typer commands, one module per command group."""
