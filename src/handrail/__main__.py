"""``python -m handrail``: the ``handrail`` command (the same as ``python -m handrail.cli``)."""

from handrail.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    main()
