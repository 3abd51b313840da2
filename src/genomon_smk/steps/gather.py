"""Gather a sample's scattered chunks into one region-major directory.

The map jobs write `<chunk dir>/<region>.bam`; the markdup job of a region needs that region's
piece from every chunk. Hard links (no data copied) re-file the pieces as
`<out>/<region>/<chunk>.bam`, so each markdup job depends on one directory instead of on every
chunk, which keeps the DAG at S*N + S*R edges. The chunk directories stay intact, so an
interrupted gather can simply run again.
"""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import sys


def link_or_copy(source: str, target: str) -> None:
    """Hard-link, or copy where the two paths are on different file systems."""
    try:
        os.link(source, target)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        shutil.copyfile(source, target)


def gather(chunk_dirs: list[str], out_dir: str) -> int:
    """Link every `<chunk_dir>/<region>.bam` to `<out_dir>/<region>/<chunk>.bam`; return links made."""
    regions = None
    links = 0
    for chunk_dir in chunk_dirs:
        chunk = os.path.basename(os.path.normpath(chunk_dir))
        pieces = sorted(name for name in os.listdir(chunk_dir) if name.endswith(".bam"))
        if regions is None:
            regions = pieces
            for piece in pieces:
                os.makedirs(os.path.join(out_dir, piece[: -len(".bam")]), exist_ok=True)
        elif pieces != regions:
            raise ValueError(f"{chunk_dir}: holds {len(pieces)} region pieces, the first chunk {len(regions)}")
        for piece in pieces:
            target = os.path.join(out_dir, piece[: -len(".bam")], f"{chunk}.bam")
            link_or_copy(os.path.join(chunk_dir, piece), target)
            links += 1
    return links


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Re-file scattered chunk pieces by region (hard links).")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("chunk_dirs", nargs="+")
    args = parser.parse_args(argv)
    links = gather(args.chunk_dirs, args.out_dir)
    print(f"gather: {links} pieces from {len(args.chunk_dirs)} chunks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
