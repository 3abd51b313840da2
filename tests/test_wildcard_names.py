"""Every name a wildcard or a path will carry is checked before Snakemake sees it (issue 34): the
cohort's name taken from a file name, like the `cohort` key."""

import pytest
from snakemake.exceptions import WorkflowError

from conftest import parse_workflow, write_config



@pytest.mark.parametrize("file_name", ["{x}.csv", "<b>x.csv", "a b.csv"])
def test_a_sheet_file_name_that_cannot_name_the_cohort_is_refused_naming_the_key(tmp_path, testdata, file_name):
    """Issue 34: the cohort's name taken from the sheet's file name was never checked; Snakemake
    refused it mid-plan (WildcardError, "Undefined pathvar")."""
    sheet = tmp_path / file_name
    sheet.write_text(f"[fastq]\ntumor,{testdata}/fastq/tumor_L1_R1.fastq.gz,{testdata}/fastq/tumor_L1_R2.fastq.gz\n")
    config = write_config(tmp_path, testdata, samples=None, pairs=None, control_panels={},
                          genomon_sample_sheet=str(sheet))
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(config)
    line = next(n for n, text in enumerate(config.read_text().splitlines(), 1) if "genomon_sample_sheet" in text)
    assert f"{config}:{line}: key 'genomon_sample_sheet': the file name {file_name!r} names the cohort" in \
        str(refused.value)
    assert "rename the file" in str(refused.value)


def test_a_samples_table_file_name_that_cannot_name_the_cohort_is_refused_and_cohort_is_the_way_out(tmp_path, testdata):
    samples = tmp_path / "my samples.tsv"
    samples.write_text((testdata / "samples.tsv").read_text())
    (tmp_path / "fastq").symlink_to(testdata / "fastq")
    config = write_config(tmp_path, testdata, samples=str(samples))
    with pytest.raises(WorkflowError) as refused:
        parse_workflow(config)
    assert "key 'samples': the file name 'my samples.tsv' names the cohort" in str(refused.value)
    assert "or set config `cohort`" in str(refused.value)
    workflow = parse_workflow(write_config(tmp_path, testdata, samples=str(samples), cohort="mine"))
    assert workflow.globals["COHORT_NAME"] == "mine"
