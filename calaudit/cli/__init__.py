"""The command-line interface (Typer). Nothing imports this package."""
