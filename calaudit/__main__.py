"""``python -m calaudit`` runs the command-line interface."""

from calaudit.cli.app import main

main()
