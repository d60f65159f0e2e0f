"""``python -m handrail.cli``: the ``handrail`` command."""

from handrail.cli import main

main()
