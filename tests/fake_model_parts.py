"""Tiny stand-ins for the embedded models' part packages: a ModelSpec over a few bytes, and fake installed
distributions of its parts (dist-info with METADATA and RECORD, found by importlib.metadata once their site
directory is on sys.path). Nothing in them is ever imported; their ``__init__.py`` raises if it were.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from handrail.components.generators.chat._gguf_parts import ModelSpec

PART_BYTES = [b"GGUF" + b"a" * 60, b"b" * 64, b"c" * 17]
WHOLE = b"".join(PART_BYTES)


def tiny_spec(data: bytes = WHOLE, *, key: str = "tiny", parts: int = 3) -> ModelSpec:
    """A model of ``parts`` part packages ``{key}-model-part1`` … whose assembled file is ``data``."""
    return ModelSpec(
        key=key,
        name=f"{key}-model",
        file_name=f"{key}.gguf",
        distribution_prefix=f"{key}-model-part",
        version="1.2.3",
        parts=parts,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        extra=f"local-{key}",
        upstream=f"Example/{key}-GGUF/{key}.gguf",
        license="Apache-2.0",
    )


def install_fake_parts(
    site: Path, spec: ModelSpec, contents: list[bytes], numbers: list[int] | None = None,
    author: str = "someone <someone@example.com>",
) -> None:  # fmt: skip
    """Write fake installed distributions of ``spec``'s parts ``numbers`` (default: all) into ``site``."""
    for number in numbers or range(1, len(contents) + 1):
        name = spec.distribution(number)
        module = name.replace("-", "_")
        package = site / module
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("raise RuntimeError('part package code must never run')\n")
        (package / "data" / spec.part_file(number)).write_bytes(contents[number - 1])
        info = site / f"{module}-{spec.version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {spec.version}\nAuthor-email: {author}\n"
        )
        (info / "RECORD").write_text(
            f"{module}/__init__.py,,\n{module}/data/{spec.part_file(number)},,\n"
            f"{info.name}/METADATA,,\n{info.name}/RECORD,,\n"
        )
