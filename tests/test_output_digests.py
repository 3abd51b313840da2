"""The .test run's outputs, by content: speed work (and any other change) must not change a
record, a duplicate flag, a call or a column. Each final file is reduced to what it says (BAMs:
the header without @PG lines and every record; tables and VCFs: every line but the `#` meta
lines, which carry dates, users and versions) and compared with the digests below.

A deliberate change of the outputs updates the digests: `.venv/bin/python
tests/test_output_digests.py RESULTS_DIR` prints them for a finished .test run."""

import gzip
import hashlib
import sys
from pathlib import Path

import pysam
import pytest

pytestmark = pytest.mark.workflow

# path under the output directory -> sha256 of its content
DIGESTS = {
    "bam/tumor/tumor.markdup.bam": "2aeb0007d370379debe4ee0805c6b9e64360085afd0f68d08d7e55189729d971",
    "bam/normal/normal.markdup.bam": "f9aed0609df6c1adde87c3df097328a9c7f4235e03b7313454ca50ba5a3ba66b",
    "bam/pon1/pon1.markdup.bam": "243460746bea25113e26d7b8f418c1ab1437ec7370e16849064fab01e3555a1a",
    "bam/pon2/pon2.markdup.bam": "3e17bba9d6f390f75e5966e03b04166e72b6b8e1409e65760764a6c8787ec52f",
    "bam/pon3/pon3.markdup.bam": "041d6195fa33e7a1802aa2053600baa69d368f71f4973e7506337141946cd139",
    "mutation/tumor/tumor.genomon_mutation.result.txt": "56dd37f15217da3f780e59a42257ca18d6bbf3cdc7bd40a09e937cc989584197",
    "mutation/tumor/tumor.genomon_mutation.result.filt.txt": "0d2daf55db91a1737ec31542ae25c1cc596367064d164da6eccac912d726bb6b",
    "mutation/tumor/tumor.genomon_mutation.result.filt.vcf.gz": "83d4b20ce53eb31510bbe9f497796473ffd8fd8b6cdfd8937544440b78702ae7",
    "mutation/tumor/tumor.genomon_mutation.result.vcf.gz": "f3cbbb933f59491b643edd0b01ded6fd54ba35ff718be0178cbf743ecac892b4",
    "sv/tumor/tumor.genomonSV.result.txt": "f8f43a8dc41fed70fe094e42388863aee96b0c8122f3d9de75e6765dafa2d01e",
    "sv/tumor/tumor.genomonSV.result.filt.txt": "f8f43a8dc41fed70fe094e42388863aee96b0c8122f3d9de75e6765dafa2d01e",
}
BAMS = [f"bam/{sample}/{sample}.markdup.bam" for sample in ("tumor", "normal", "pon1", "pon2", "pon3")]
TABLES = [f"mutation/tumor/tumor.genomon_mutation.result{suffix}"
          for suffix in (".txt", ".filt.txt", ".filt.vcf.gz", ".vcf.gz")] + [
          f"sv/tumor/tumor.genomonSV.result{suffix}" for suffix in (".txt", ".filt.txt")]


def content_digest(path: Path) -> str:
    digest = hashlib.sha256()
    if path.suffix == ".bam":
        with pysam.AlignmentFile(str(path)) as bam:
            header = [line for line in str(bam.header).splitlines() if not line.startswith("@PG")]
            digest.update("\n".join(header).encode())
            for record in bam.fetch(until_eof=True):
                digest.update(record.to_string().encode() + b"\n")
        return digest.hexdigest()
    with (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)) as handle:
        for line in handle:
            if not line.startswith("#"):
                digest.update(line.encode())
    return digest.hexdigest()


def digests(results: Path) -> dict[str, str]:
    return {name: content_digest(results / name) for name in BAMS + TABLES}


def test_the_test_runs_outputs_are_unchanged_in_content(pipeline_run):
    found = digests(pipeline_run)
    changed = [name for name in found if found[name] != DIGESTS.get(name)]
    assert not changed, (f"outputs changed in content: {', '.join(changed)}; if deliberately, the new digests:\n"
                         + "\n".join(f'    "{name}": "{value}",' for name, value in found.items()))


if __name__ == "__main__":
    for name, value in digests(Path(sys.argv[1])).items():
        print(f'    "{name}": "{value}",')
