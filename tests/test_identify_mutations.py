"""The identify-mutations driver: each branch of Genomon's chain (pair or tumor only, with or
without a simple-repeat database, with or without a panel) runs the right tools in order on the
right files, and a failing tool fails the job without a result."""

import os
import subprocess
import sys
import tempfile

import pytest

from genomon_smk.steps import identify_mutations as driver

# A stand-in for fisher, mutfilter and EBFilter: logs its arguments, then writes its output
# table: fisher two rows, a filter its input with its name appended, EBFilter likewise.
STAND_IN = r"""
import sys
name, args = sys.argv[1], sys.argv[2:]
with open(sys.argv[0] + ".calls", "a") as log:
    log.write(" ".join([name] + args) + "\n")
if "FAIL" in args:
    sys.exit(4)
if name == "fisher":
    rows = ["chr1\t10\t10\tA\tT\n", "chr1\t20\t20\tG\tC\n"]
elif name == "hotspotCall":  # tumor normal output database: every database row, LOD 9
    rows = ["Chr\tStart\tEnd\tRef\tAlt\tscore\n"] + [
        "\t".join(line.split("\t")[:5] + ["x"] * 13 + ["9.000"]) + "\n" for line in open(args[-1])]
    args.append(args[-2])
else:
    source = args[args.index("-t") + 1] if "-t" in args else args[-4]
    rows = [line.rstrip("\n") + f"\t{args[0] if name == 'mutfilter' else 'eb'}\n" for line in open(source)]
output = args[args.index("-o") + 1] if "-o" in args else args[-1]
with open(output, "w") as out:
    out.writelines(rows)
"""


@pytest.fixture
def tools(tmp_path):
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    return script, ["--tools", "upstream", "--upstream",
                    *(f"{name}={sys.executable} {script} {name}" for name in ("fisher", "mutfilter", "EBFilter"))]


def identify(tmp_path, tools, *extra):
    script, commands = tools
    output = tmp_path / "region.txt"
    result = subprocess.run(
        [sys.executable, "-m", "genomon_smk.steps.identify_mutations", "--tumor", "t.bam", "--reference", "ref.fa",
         "--intervals", "chr1:1-100,chr2:1-50", "--work-dir", str(tmp_path / "work"), "--output", str(output),
         *commands, "--fisher-options=--min_depth 8 --base_quality 15", "--eb-options=-q 20 -Q 15",
         *extra], capture_output=True, text=True)
    calls = [line.split() for line in script.with_name("stand_in.py.calls").read_text().splitlines()]
    return result, output, calls


def steps(calls):
    return [call[0] if call[0] != "mutfilter" else call[1] for call in calls]


@pytest.mark.parametrize("normal, repeats, panel, expected, columns", [
    (True, True, True, ["fisher", "realignment", "indel", "breakpoint", "simplerepeat", "EBFilter"],
     ["realignment", "indel", "breakpoint", "simplerepeat", "eb"]),
    (True, False, False, ["fisher", "realignment", "indel", "breakpoint"],
     ["realignment", "indel", "breakpoint", "---", "---"]),
    (False, True, False, ["fisher", "realignment", "simplerepeat"], ["realignment", "simplerepeat"]),
    (False, False, True, ["fisher", "realignment", "EBFilter"], ["realignment", "---", "---", "eb"]),
])
def test_each_branch_runs_genomons_chain(tmp_path, tools, normal, repeats, panel, expected, columns):
    extra = (["--normal=n.bam"] if normal else []) + (["--simple-repeat-db", "rep.bed.gz"] if repeats else []) \
        + (["--panel", "p1.bam", "p2.bam"] if panel else [])
    result, output, calls = identify(tmp_path, tools, *extra)
    assert result.returncode == 0, result.stderr
    assert steps(calls) == expected
    assert calls[0][1] == ("comparison" if normal else "single")
    assert calls[0][calls[0].index("-L") + 1] == str(tmp_path / "work" / "region.txt")
    assert (tmp_path / "work" / "region.txt").read_text() == "chr1:1-100,chr2:1-50\n"
    assert calls[0][-4:] == ["--min_depth", "8", "--base_quality", "15"]  # the options as separate words
    if normal:
        assert all("n.bam" in call for call in calls[:4])
    if panel:
        assert calls[-1][1:5] == ["-f", "anno", "--loption", "-q"]
        assert (tmp_path / "work" / "panel.txt").read_text() == "p1.bam\np2.bam\n"
    rows = output.read_text().splitlines()
    assert [row.split("\t")[5:] for row in rows] == [columns] * 2


def test_a_failing_tool_fails_the_job_and_leaves_no_result(tmp_path, tools):
    result, output, calls = identify(tmp_path, tools, "--normal=n.bam", "--indel-options=FAIL")
    assert result.returncode == 1
    assert "mutfilter indel" in result.stderr and "failed with exit status 4" in result.stderr
    assert steps(calls) == ["fisher", "realignment", "indel"] and not output.exists()


def test_an_empty_panel_argument_means_no_panel():
    chain = driver.Chain(tumor="t", reference="r", region_file="x", work="w", panel=())
    assert [step.name for step in driver.steps(chain)] == [
        "fisher", "realignment", "no simple-repeat database: --- in its columns"]
    assert chain.result == "w/annotated.txt"


def test_upstream_fisher_never_gets_the_edited_reads_screen(tmp_path, tools):
    """--tumor-mapped-here asks genomon-smk's fisher to screen the tumor's edited reads; Genomon's
    own fisher has no such option and gets its usual command line."""
    result, _, calls = identify(tmp_path, tools, "--normal=n.bam", "--tumor-mapped-here")
    assert result.returncode == 0, result.stderr
    assert calls[0][:2] == ["fisher", "comparison"] and "--screen_edited_reads" not in calls[0]


def test_builtin_fisher_screens_the_edited_reads_of_a_tumor_this_pipeline_mapped():
    chain = driver.Chain(tumor="t", reference="r", region_file="x", work="w", normal="n", screen_edited_reads=True)
    assert "--screen_edited_reads" in driver.steps(chain)[0].argv
    unscreened = driver.Chain(tumor="t", reference="r", region_file="x", work="w", normal="n")
    assert "--screen_edited_reads" not in driver.steps(unscreened)[0].argv


def test_builtin_tools_run_in_this_process(tmp_path, capsys):
    """`--tools builtin` runs each step's tool as genomon-smk's own main(argv) in the driver's
    process (their messages land in this process's stderr); a failure fails as its command would."""
    missing = str(tmp_path / "missing.txt")
    builtin = driver.Tools("builtin")
    simplerepeat = driver.Step("simplerepeat", "mutfilter", ("simplerepeat", "-t", missing, "-S",
                                                           str(tmp_path / "db.gz"), "-o", str(tmp_path / "out.txt")))
    with pytest.raises(driver.ToolFailed) as failure:
        builtin.run(simplerepeat)
    assert failure.value.status == 1 and missing in capsys.readouterr().err
    with pytest.raises(driver.ToolFailed) as failure:
        builtin.run(driver.Step("EBFilter", "EBFilter", ("-f", "anno", missing, "t.bam", "list.txt", "out.txt")))
    assert failure.value.status == 1 and "no such target file" in capsys.readouterr().err
    assert set(driver.BUILTIN_MAINS) >= {step.tool for step in driver.steps(driver.Chain(
        tumor="t", normal="n", panel=("p",), reference="r", region_file="x", work="w", simple_repeat_db="s",
        hotspot_db="h"))}


def test_an_upstream_tool_missing_from_path_fails_the_job(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(driver.ToolFailed) as failure:
        driver.Tools("upstream").run(driver.Step("fisher", "fisher", ("comparison",)))
    assert failure.value.status == 127 and "fisher" in capsys.readouterr().err


def test_the_hotspot_call_runs_after_fisher_on_the_regions_database_rows_and_merges_into_its_rows(tmp_path, tools):
    script, commands = tools
    commands = [*commands, f"hotspotCall={sys.executable} {script} hotspotCall",
                f"mutil={sys.executable} -m genomon_smk.tools.mutil"]
    database = tmp_path / "hotspot.txt"
    database.write_text("chr3\t5\t5\tA\tC\tout\nchr2\t40\t40\tC\tT\tin\nchr1\t500\t500\tG\tA\tout\n"
                        "# a comment\nchr1\t15\t15\tA\tG\tin\nchr1\t10\t10\tA\tT\tin\n")
    result, output, calls = identify(tmp_path, (script, commands), "--normal=n.bam", f"--hotspot-db={database}",
                                     "--hotspot-options=-t 0.1 -S '-B -q 20'")
    assert result.returncode == 0, result.stderr
    assert steps(calls) == ["fisher", "hotspotCall", "realignment", "indel", "breakpoint"]
    region_db = tmp_path / "work" / "hotspot_db.txt"
    assert calls[1][1:] == ["-t", "0.1", "-S", "-B", "-q", "20", "t.bam", "n.bam",
                            str(tmp_path / "work" / "hotspot.txt"), str(region_db)]
    # Genomon's <db>.<i>: the rows inside the region, in its intervals' order, then by Start
    assert [line.split("\t")[5] for line in region_db.read_text().splitlines()] == ["in"] * 3
    assert [line.split("\t")[:2] for line in region_db.read_text().splitlines()] == [
        ["chr1", "10"], ["chr1", "15"], ["chr2", "40"]]
    assert calls[2][calls[2].index("-t") + 1] == str(tmp_path / "work" / "fisher_hotspot.txt")
    rows = [row.split("\t") for row in output.read_text().splitlines()]
    assert [(row[0], row[1]) for row in rows] == [("chr1", "10"), ("chr1", "15"), ("chr1", "20"), ("chr2", "40")]
    # fisher's rows gain score(hotspot): the LOD where hotspotCall called the site too, else ---
    assert (rows[0][5], rows[2][5], rows[1][18], rows[3][18]) == ("9.000", "---", "9.000", "9.000")


def test_without_a_normal_the_hotspot_database_is_not_called(tmp_path, tools):
    result, _, calls = identify(tmp_path, tools, "--hotspot-db=missing.txt")
    assert result.returncode == 0, result.stderr
    assert steps(calls) == ["fisher", "realignment"]


def test_the_staged_reference_is_found_or_staged_in_the_drivers_process_as_reference_cache_ensure_does(tmp_path):
    from genomon_smk.steps import reference_cache

    files = []
    for name, text in (("ref.fa", ">c\nACGT\n"), ("ref.fa.fai", "c\t4\t3\t4\t5\n")):
        (tmp_path / name).write_text(text)
        files.append(str(tmp_path / name))
    manifest, cache = str(tmp_path / "staged.json"), str(tmp_path / "cache")
    assert reference_cache.main(["setup", "--cache", cache, "--manifest", manifest, *files]) == 0
    staged = reference_cache.cached_path(cache, files[0])
    assert driver.staged_reference(manifest, cache, "copy") == staged
    os.unlink(staged)  # a new node: staged again
    assert driver.staged_reference(manifest, cache, "copy") == staged and open(staged).read() == ">c\nACGT\n"
    with pytest.raises(SystemExit, match="--cache"):
        driver.staged_reference(manifest, None, "copy")


def test_the_tools_temporaries_go_to_the_jobs_work_dir_not_the_system_tmp(tmp_path, monkeypatch):
    """fisher's site BED (`mpileup -l`), EBFilter's lists and upstream tools' temporaries: in the
    job's work directory on its tier (tempfile's directory and TMPDIR), not /tmp."""
    monkeypatch.setattr(tempfile, "tempdir", None)  # restored after the test
    monkeypatch.setenv("TMPDIR", str(tmp_path / "system-tmp"))
    seen = {}

    def record(chain, output, tools):
        with tempfile.NamedTemporaryFile(prefix="fisher.", suffix=".bed") as bed:
            seen.update(bed=bed.name, env=os.environ["TMPDIR"])

    monkeypatch.setattr(driver, "run", record)
    work = tmp_path / "work"
    assert driver.main(["--tumor", "t.bam", "--reference", "ref.fa", "--intervals", "chr1:1-10",
                        "--work-dir", str(work), "--output", str(tmp_path / "out.txt")]) == 0
    assert os.path.dirname(seen["bed"]) == str(work) and seen["env"] == str(work)
