"""Checks of the reference genome and the files that must lie next to it."""

from __future__ import annotations

import os

BWA_INDEX_SUFFIXES = (".amb", ".ann", ".bwt", ".pac", ".sa")


def reference_files(fasta: str) -> list[str]:
    """The FASTA, its .fai and its bwa index files: everything a mapping job reads."""
    return [fasta, fasta + ".fai"] + [fasta + suffix for suffix in BWA_INDEX_SUFFIXES]


def reference_problems(fasta: str) -> list[str]:
    """What is missing for the reference to be used, with the command that fixes it."""
    if not os.path.isfile(fasta):
        return [f"reference: file not found: {fasta}"]
    problems = []
    if not os.path.isfile(fasta + ".fai"):
        problems.append(f"reference: no FASTA index {fasta}.fai; build it with: samtools faidx {fasta}")
    missing = [suffix for suffix in BWA_INDEX_SUFFIXES if not os.path.isfile(fasta + suffix)]
    if missing:
        problems.append(
            f"reference: no bwa index (missing {', '.join(missing)} next to {fasta}); build it with: bwa index {fasta}"
        )
    return problems
