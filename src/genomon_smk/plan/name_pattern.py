"""A regular expression matching exactly a set of names, fast whatever their number.

Wildcard constraints list the cohort's samples and tumors (rules/paths.smk). As one alternation
(`a|b|c|...`) Python's re tries every name in turn: 49 us a match at 2,000 samples, and
Snakemake matches every file it plans against the rules' patterns. The same names as a trie
(`tumor(?:00(?:0|1)|...)`) cost a few steps per character.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

NOTHING = "(?!)"


def one_of(names: Iterable[str]) -> str:
    """A regex (no anchors, no capturing groups) that matches exactly the given names; one that
    matches nothing when there are none."""
    trie: dict = {}
    for name in names:
        node = trie
        for char in name:
            node = node.setdefault(char, {})
        node[""] = {}  # a name ends here
    return _pattern(trie) if trie else NOTHING


def _pattern(node: dict) -> str:
    ends = "" in node
    branches = [re.escape(char) + _pattern(child) for char, child in sorted(node.items()) if char]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if ends:
        return f"(?:{body})?"
    return body
