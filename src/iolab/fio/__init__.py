"""fio: pure job builders, one runner, and JSON parsing. Nothing here knows about databases."""
