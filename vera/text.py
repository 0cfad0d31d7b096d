"""Text files as people save them: UTF-8, with or without the byte-order mark that
spreadsheets and Windows editors put first; any other encoding named, not misread.

Every file a user writes for vera (a run config, a provider profile, a rubric, personas,
prompt templates, transcripts, human ratings) is read through `decode`, so a config
saved with a BOM loads like one without, and a rubric saved as Windows-1252 or UTF-16
is refused in one line that names the file and the encoding it looks like, instead of
passing with mangled accents or failing as "invalid TOML".

The guess is cheap and only for the message: byte-order marks, the NUL bytes UTF-16
puts in every other place, and the bytes Windows-1252 uses where Latin-1 has controls.

Also which script a text is written in (`is_chinese`), which the offline stand-ins and
the card's language check share.

Imports nothing from vera but the error tree: it sits at the bottom of the layers.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from vera.errors import DataError

_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32 (little-endian, with a byte-order mark)"),
    (codecs.BOM_UTF32_BE, "UTF-32 (big-endian, with a byte-order mark)"),
    (codecs.BOM_UTF16_LE, "UTF-16 (little-endian, with a byte-order mark)"),
    (codecs.BOM_UTF16_BE, "UTF-16 (big-endian, with a byte-order mark)"),
)


def guess_encoding(raw: bytes) -> str:
    """What a file that is not UTF-8 most likely is, in words for a message."""
    for bom, name in _BOMS:  # UTF-32 LE's mark begins with UTF-16 LE's: longest first
        if raw.startswith(bom):
            return name
    sample = raw[:4096]
    if len(sample) >= 2:
        even, odd = sample[0::2], sample[1::2]
        # Text in the Latin alphabet as UTF-16 has a NUL in every other byte.
        if odd.count(0) > len(odd) // 3 and even.count(0) < len(even) // 10:
            return "UTF-16 (little-endian, without a byte-order mark)"
        if even.count(0) > len(even) // 3 and odd.count(0) < len(odd) // 10:
            return "UTF-16 (big-endian, without a byte-order mark)"
    # Windows-1252 puts curly quotes, dashes and the euro sign at 0x80-0x9F, which are
    # control characters in Latin-1 and never stand alone in UTF-8.
    if any(0x80 <= b <= 0x9F for b in raw):
        return "Windows-1252 (cp1252)"
    return "Latin-1 (ISO-8859-1) or Windows-1252 (cp1252)"


def decode(raw: bytes, path: str | Path, what: str) -> str:
    """`raw` as text: UTF-8, a leading byte-order mark dropped. Anything else is a
    DataError naming the file, the line of the first byte that is not UTF-8 and the
    encoding the file looks like."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        guess = guess_encoding(raw)
        where = str(path)
        if "UTF-16" not in guess and "UTF-32" not in guess:  # lines mean something only in a byte encoding
            line = raw.count(b"\n", 0, exc.start) + 1
            where = f"{path}:{line}"
        raise DataError(
            where,
            f"{what} is not UTF-8 text: it looks like {guess}; save it as UTF-8 "
            "(in a spreadsheet: CSV/TSV UTF-8; in an editor: encoding UTF-8)",
        ) from None


BOM = "\ufeff"
_BOM_BYTES = codecs.BOM_UTF8
STRAY_BOM = "a byte-order mark in the middle of the file: were two files joined? Remove it"


def refuse_stray_bom(text: str | bytes, path: str | Path) -> None:
    """A `DataError("file:line")` when a byte-order mark (U+FEFF) stands anywhere but at
    the very start of a file's text or bytes. Spreadsheets put one first in every export,
    so two exported files joined into one carry the second's in the middle, where it is
    invisible and would become part of a rater's name or an id ("\ufeffDr Li" is
    another rater than "Dr Li"). One at the very start is the file's own, accepted
    (`decode` drops it; a text from `decode` starts after it). Every reader of a
    ratings, rubric or persona file people export from a spreadsheet calls this
    (vera.files re-exports it; vera.stats, below vera.files, takes it from here)."""
    if isinstance(text, bytes):
        at = text.find(_BOM_BYTES, 1)
        line = text.count(b"\n", 0, at) + 1 if at >= 0 else 0
    else:
        at = text.find(BOM, 1 if text.startswith(BOM) else 0)
        line = text.count("\n", 0, at) + 1 if at >= 0 else 0
    if line:
        raise DataError(f"{path}:{line}", STRAY_BOM)


def read_text(path: Path, what: str) -> tuple[bytes, str]:
    """(raw bytes for hashing, text) of the file at `path`, decoded by `decode`; a file
    that cannot be read is a DataError naming it."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(str(path), f"cannot read {what}: {exc.strerror or exc}") from None
    return raw, decode(raw, path, what)


# CJK unified ideographs (with extension A) and the compatibility block.
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def is_chinese(text: str) -> bool:
    """Whether `text` is written (mostly) in Chinese: at least a third of its letters
    are CJK characters, so a Chinese sentence with an English word in it counts, and an
    English one quoting a Chinese word does not."""
    letters = sum(1 for ch in text if ch.isalpha())
    return letters > 0 and len(CJK.findall(text)) * 3 >= letters
