"""Genetic codes and strand helpers for the annotator."""

from __future__ import annotations

_BASES = "TCAG"
_STANDARD_AA = "FFLLSSSSYY**CC*WLLLLPPPPHHQQRRRRIIIMTTTTNNKKSSRRVVVVAAAADDEEGGGG"

STANDARD = {a + b + c: _STANDARD_AA[16 * i + 4 * j + k]
            for i, a in enumerate(_BASES) for j, b in enumerate(_BASES) for k, c in enumerate(_BASES)}
#: vertebrate mitochondrial code (NCBI table 2): AGA/AGG stop, ATA Met, TGA Trp
MITOCHONDRIAL = dict(STANDARD, AGA="*", AGG="*", ATA="M", TGA="W")

_COMPLEMENT = str.maketrans("ACGTNacgtn", "TGCANtgcan")


def revcomp(seq: str) -> str:
    return seq.translate(_COMPLEMENT)[::-1]


def translate(seq: str, code: dict[str, str]) -> str:
    """Amino acids of the complete codons of `seq` (`*` for stop, `X` for codons with N)."""
    return "".join(code.get(seq[i:i + 3], "X") for i in range(0, len(seq) - len(seq) % 3, 3))
