"""The image part of a chat message: base64 data, its MIME type, and OpenAI's ``detail`` hint.

The shape and the dict layout are Haystack's ``ImageContent`` (``{"base64_image", "mime_type", "detail", "meta",
"validation"}``). Building one checks the base64 text and the MIME type (guessed from the bytes when not given);
``validation=False`` skips both, for large images already known to be good.
"""

from __future__ import annotations

import base64
import binascii
import logging
import mimetypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from handrail.errors import ConfigurationError

__all__ = ["IMAGE_MIME_TYPES", "ImageContent"]

logger = logging.getLogger("handrail.dataclasses.image_content")

IMAGE_MIME_TYPES = frozenset({
    "image/bmp", "image/x-pcx", "application/postscript", "image/gif", "image/png", "image/jp2", "image/icns",
    "image/x-icon", "image/jpeg", "image/jpg", "video/mpeg", "image/tiff", "image/mpo", "image/palm",
    "application/pdf", "image/x-portable-anymap", "image/vnd.adobe.photoshop", "image/sgi", "image/x-tga",
    "image/webp", "image/xbm", "image/xpm",
})  # fmt: skip
"""The MIME types an :class:`ImageContent` accepts (the same set as Haystack's)."""

_DETAILS = ("auto", "high", "low")

_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
    (b"\x00\x00\x01\x00", "image/x-icon"),
    (b"8BPS", "image/vnd.adobe.photoshop"),
    (b"%PDF", "application/pdf"),
)


def guess_image_mime_type(data: bytes) -> str | None:
    """The MIME type of common image formats, read from their first bytes, or None when not recognised."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    for signature, mime in _SIGNATURES:
        if data.startswith(signature):
            return mime
    return None


@dataclass(slots=True)
class ImageContent:
    """An image in a message (a user message, or a tool's result for providers that take images).

    Raises:
        ConfigurationError: (a ValueError) when ``base64_image`` is not valid base64, ``mime_type`` is not an image
            MIME type (:data:`IMAGE_MIME_TYPES`) or ``detail`` is not ``"auto"``, ``"high"`` or ``"low"``.
            ``validation=False`` skips the base64 and MIME checks.

    Examples:
        >>> ImageContent(base64_image="iVBORw0KGgo=").mime_type
        'image/png'
    """

    base64_image: str
    """The image bytes as base64 text."""
    mime_type: str | None = None
    """The MIME type (``"image/png"``...); guessed from the bytes when not given (a warning is logged if not)."""
    detail: Literal["auto", "high", "low"] | None = None
    """OpenAI's detail level for the image, or None to leave the provider's default."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Free metadata about the image (its file name, ...)."""
    validation: bool = True
    """Check the base64 text and the MIME type when the part is built."""

    def __post_init__(self) -> None:
        if self.detail is not None and self.detail not in _DETAILS:
            raise ConfigurationError(
                f"ImageContent detail must be one of {list(_DETAILS)} or None, got {self.detail!r:.80}."
            )
        if not self.validation:
            return
        if not isinstance(self.base64_image, str):
            raise ConfigurationError(
                f"ImageContent base64_image must be a str, got {type(self.base64_image).__name__}."
            )
        try:
            decoded = base64.b64decode(self.base64_image, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ConfigurationError(f"The base64 string is not valid: ImageContent base64_image ({exc}).") from exc
        if not self.mime_type:
            self.mime_type = guess_image_mime_type(decoded)
            if self.mime_type is None:
                logger.warning(
                    "Failed to guess the MIME type of the image; pass mime_type= so providers read it correctly."
                )
        if self.mime_type and self.mime_type not in IMAGE_MIME_TYPES:
            raise ConfigurationError(f"{self.mime_type} is not a valid image MIME type.")

    def __repr__(self) -> str:
        shown = self.base64_image if len(self.base64_image) <= 100 else self.base64_image[:100] + "..."
        return (
            f"ImageContent(base64_image={shown!r}, mime_type={self.mime_type!r}, detail={self.detail!r}, "
            f"meta={self.meta!r})"
        )

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"base64_image", "mime_type", "detail", "meta", "validation"}`` (Haystack's layout)."""
        return {
            "base64_image": self.base64_image,
            "mime_type": self.mime_type,
            "detail": self.detail,
            "meta": self.meta,
            "validation": self.validation,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ImageContent:
        """Rebuild an ImageContent from :meth:`to_dict` output (only ``base64_image`` is required).

        Raises:
            SerializationError: When a key is unknown or a field has the wrong type (naming it).
            ConfigurationError: When the image itself is refused (see the class).
        """
        from handrail.dataclasses import _message_shapes as shapes  # (it does not import this module)

        shapes.check_image_data(data)
        return cls(**{k: data[k] for k in data if k != "meta"}, meta=dict(data.get("meta") or {}))

    @classmethod
    def from_file_path(
        cls,
        file_path: str | Path,
        *,
        detail: Literal["auto", "high", "low"] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> ImageContent:
        """Read an image file into an ImageContent (the MIME type from the bytes, else from the file name).

        ``meta`` gets ``file_path`` unless it has one. Nothing is resized (Haystack's ``size=`` needs Pillow).

        Raises:
            ConfigurationError: When the file cannot be read, is a PDF, or is not an image.
        """
        path = Path(file_path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigurationError(f"ImageContent.from_file_path cannot read {str(path)!r}: {exc}.") from exc
        mime = guess_image_mime_type(data) or mimetypes.guess_type(path.name)[0]
        if mime == "application/pdf":
            raise ConfigurationError(
                f"ImageContent.from_file_path: {str(path)!r} is a PDF; PDF files are not supported, pass an image."
            )
        if mime not in IMAGE_MIME_TYPES:
            raise ConfigurationError(
                f"ImageContent.from_file_path: {str(path)!r} is not an image file (MIME type {mime!r})."
            )
        return cls(
            base64_image=base64.b64encode(data).decode("ascii"),
            mime_type=mime,
            detail=detail,
            meta={"file_path": str(path), **(meta or {})},
        )
