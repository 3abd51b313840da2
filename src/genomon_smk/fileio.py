"""Reading files that may be gzip-compressed, shared by every layer (tools, plan, steps).

Whether a file is compressed is read from its first bytes, never its name; decompression is ISA-L's
reader (igzip: the gzip module's bytes in about half its time), which reads BGZF (multi-member
gzip) as well.
"""

from __future__ import annotations

import gzip
import zlib
from typing import BinaryIO, TextIO

from isal import igzip, isal_zlib

GZIP_MAGIC = b"\x1f\x8b"
# What reading a damaged gzip file raises (ISA-L's reader, with the gzip module's checks).
GZIP_ERRORS = (EOFError, zlib.error, isal_zlib.error, gzip.BadGzipFile)


def is_gzipped(path: str) -> bool:
    """Whether the file starts with gzip's magic bytes (gzip or bgzip)."""
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def open_maybe_gzipped(path: str) -> BinaryIO:
    """The file's bytes, decompressed when it is gzip or bgzip."""
    return igzip.open(path, "rb") if is_gzipped(path) else open(path, "rb")


def open_text(path: str) -> TextIO:
    """The file's text, decompressed when it is gzip or bgzip."""
    return igzip.open(path, "rt") if is_gzipped(path) else open(path)
