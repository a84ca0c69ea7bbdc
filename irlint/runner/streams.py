"""Opening dump files: plain, compressed (gzip, bzip2, xz, zstd; recognised by their magic bytes, whatever their
name) or read once into a spool (standard input, a pipe); telling a dump from other content by its first bytes."""

from __future__ import annotations

import io
import os
import sys
from typing import BinaryIO

from ..read.dump_start import is_dump_start

HEAD_BYTES = 256  # an analyze_fail.ir of 2.3 and later opens with a rule of 97 "="
STDIN = "-"
# Compressed dumps are recognised by their magic bytes, whatever their name.
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))


class InputError(Exception):
    """A path the user named cannot be used at all (exit code 2)."""


# what a damaged compressed stream raises, besides zlib.error and lzma.LZMAError
_DECOMPRESS_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, ValueError)
# standard input and pipes (/dev/stdin, a FIFO): read once, kept here, since they cannot be read again
buffers: dict[str, Spool] = {}
SPOOL_BLOCK = 8 * 1024 * 1024


# a stream that never ends (`yes '# IR entry: @g' | irlint -`) is refused past this much
MAX_STREAM_BYTES = 8 << 30


class Spool:
    """A stream that can be read only once (standard input, a pipe), copied in blocks to an
    anonymous temporary file (no name; gone when irlint ends), so that it is read like a file:
    in blocks, and back again for the lines a report quotes. Memory does not grow with its size."""

    def __init__(self, stream: BinaryIO, what: str = "-"):
        import tempfile

        self.file = tempfile.TemporaryFile(prefix="irlint-")
        try:
            block = stream.read(SPOOL_BLOCK)
            # one that does not start like a dump (/dev/zero, /dev/urandom) is read no further: its
            # first block says what it is; one that does is copied up to MAX_STREAM_BYTES
            more = bool(block) and (is_dump_start(block) or compression_of(block[:8]) is not None)
            while block:
                self.file.write(block)
                if self.file.tell() > MAX_STREAM_BYTES:
                    raise InputError(
                        f"{what} holds more than {MAX_STREAM_BYTES >> 20:,} MiB: save it to a file and lint that file"
                    )
                block = stream.read(SPOOL_BLOCK) if more else b""
        except BaseException:
            self.file.close()
            raise
        self.file.flush()
        self.size = self.file.tell()

    def head(self, n: int) -> bytes:
        return os.pread(self.file.fileno(), n, 0)

    def open(self) -> BinaryIO:
        """A reader of its own (its own position), seekable."""
        return io.BufferedReader(_PositionalReader(self.file.fileno(), self.size), buffer_size=1 << 20)

    def close(self) -> None:
        self.file.close()


class _PositionalReader(io.RawIOBase):
    """Reads a file descriptor at its own offset (pread), so that several readers share one file."""

    def __init__(self, fd: int, size: int):
        self._fd, self._size, self._pos = fd, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = os.pread(self._fd, len(buffer), self._pos)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        self._pos = {0: offset, 1: self._pos + offset, 2: self._size + offset}[whence]
        return self._pos

    def tell(self) -> int:
        return self._pos


def is_buffered(path: str) -> bool:
    return path in buffers


_MAGICS = tuple(magic for magic, _ in _MAGIC)


def compression_of(head: bytes) -> str | None:
    if not head.startswith(_MAGICS):  # the usual case, once per file found: one test
        return None
    return next((name for magic, name in _MAGIC if head.startswith(magic)), None)


def _zstd_module():
    """A zstd reader if one is installed (Python 3.14's compression.zstd, or the zstandard package)."""
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python 3.14 and later only

        return zstd
    except ImportError:
        pass
    try:
        import zstandard  # type: ignore[import-not-found]  # optional, and without type stubs

        return zstandard
    except ImportError:
        return None


def can_decompress(compression: str | None) -> bool:
    return compression != "zstd" or _zstd_module() is not None


def open_dump(path: str, compression: str | None = None) -> BinaryIO:
    """A binary stream of the dump's text: decompressed on the fly (seekable, so source traces can
    be read back), or the bytes read from standard input."""
    if path in buffers:
        raw: BinaryIO = buffers[path].open()
    else:
        raw = open(path, "rb")
    if compression is None:
        return raw
    try:
        if compression == "gzip":
            import gzip

            inner: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]  # a binary file, typeshed's BufferedIOBase
        elif compression == "bzip2":
            import bz2

            inner = bz2.BZ2File(raw, mode="rb")  # type: ignore[assignment]  # a binary file, as above
        elif compression == "xz":
            import lzma

            inner = lzma.LZMAFile(raw, mode="rb")  # type: ignore[assignment]  # a binary file, as above
        else:
            module = _zstd_module()
            if module is None:
                raise OSError(f"{compression}-compressed: no zstd reader is installed")
            if hasattr(module, "ZstdFile"):
                inner = module.ZstdFile(raw, mode="rb")
            else:  # the zstandard package: not seekable backwards, so read it whole
                inner = io.BytesIO(module.ZstdDecompressor().stream_reader(raw).read())
    except BaseException:
        raw.close()
        raise
    return io.BufferedReader(Decompressed(inner, raw, compression), buffer_size=1 << 20)


class Decompressed(io.RawIOBase):
    """A decompressing stream that ends where the data is damaged or cut off (the reader then sees
    a truncated dump and says so) instead of raising in the middle of a read; ``damage`` says why."""

    # small reads: a decompressor that meets the damage loses what it decoded in that read
    CHUNK = 64 * 1024

    def __init__(self, inner, raw, compression: str):
        self._inner, self._raw, self.compression = inner, raw, compression
        # read1: one decompression step, so what came before the damage is returned first
        self._read = getattr(inner, "read1", inner.read)
        self.damage = ""  # kept for the report once met
        self._ended = False  # until a seek: reading back before the damage still works

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._ended:
            return 0
        try:
            data = self._read(min(len(buffer), self.CHUNK))
        except _decompress_errors() as exc:
            self.damage = self.damage or f"damaged {self.compression} data: {exc}"
            self._ended = True
            return 0
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        self._ended = False
        try:
            return self._inner.seek(offset, whence)
        except _decompress_errors() as exc:
            self.damage = self.damage or f"damaged {self.compression} data: {exc}"
            self._ended = True
            return self._inner.tell()

    def tell(self) -> int:
        return self._inner.tell()

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._raw.close()
            super().close()


def _decompress_errors() -> tuple[type[BaseException], ...]:
    import lzma
    import zlib

    return _DECOMPRESS_ERRORS + (zlib.error, lzma.LZMAError)


def damage_of(stream) -> str:
    """Why a stream from ``open_dump`` ended early ('' when it did not)."""
    raw = getattr(stream, "raw", None)
    return getattr(raw, "damage", "")


def forget_buffers() -> None:
    """A new run (the CLI called again in one process) reads its pipes anew."""
    for spool in buffers.values():
        spool.close()
    buffers.clear()


def read_stdin(stream: BinaryIO | None = None) -> None:
    """Read standard input once (it cannot be read again), in blocks, into a spool, before discovery
    looks at it."""
    if stream is None:
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # `irlint - <&-`
            raise InputError("-: standard input is closed")
    try:
        buffers[STDIN] = Spool(stream, "-: standard input")
    except (OSError, ValueError) as exc:  # not readable (opened for writing), closed
        raise InputError(f"-: cannot read standard input: {getattr(exc, 'strerror', None) or exc}") from None


def sniff(path: str, compression: str | None = None) -> str:
    """``dump``, ``binary``, ``empty``, ``text`` (some other text), ``unreadable``, ``damaged``
    (a compressed file that does not decompress) or ``unsupported`` (zstd without a reader)."""
    if not can_decompress(compression):
        return "unsupported"
    try:
        with open_dump(path, compression) as f:
            head = f.read(HEAD_BYTES)
            if len(head) < HEAD_BYTES and damage_of(f):
                return "damaged"
    except PermissionError:
        return "unreadable"
    except _DECOMPRESS_ERRORS:
        return "damaged" if compression else "unreadable"
    return kind_of(head)


def kind_of(head: bytes) -> str:
    if is_dump_start(head):
        return "dump"
    if b"\x00" in head:
        return "binary"
    return "text" if head.strip() else "empty"


def magic_head(path: str) -> bytes:
    if path in buffers:
        return buffers[path].head(8)
    with open(path, "rb") as f:
        return f.read(8)
