"""Collection of the whole repository: the doctests of src/handrail skip the modules of an extra that is missing.

``pip install -e '.[test]'`` has no ``temporalio``, whose modules ``handrail.temporal`` imports (its package
``__init__`` does not): their doctests are collected where the ``temporal`` extra is installed. tests/fixtures/ holds data and the scripts
that wrote it (under Haystack, which the tests never import): nothing there is collected.
"""

try:
    import temporalio  # noqa: F401

    collect_ignore_glob: list[str] = ["tests/fixtures/*"]
except ImportError:
    collect_ignore_glob = ["tests/fixtures/*", "src/handrail/temporal/_*.py"]
