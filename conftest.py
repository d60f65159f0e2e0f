"""Collection of the whole repository: the doctests of src/handrail skip the modules of an extra that is missing.

``pip install -e '.[test]'`` has no ``temporalio``, whose modules ``handrail.temporal`` imports (its package
``__init__`` does not): their doctests are collected where the ``temporal`` extra is installed.
"""

try:
    import temporalio  # noqa: F401

    collect_ignore_glob: list[str] = []
except ImportError:
    collect_ignore_glob = ["src/handrail/temporal/_*.py"]
