"""Nothing outside the output directory, the configured tier places and Snakemake's `.snakemake/`
in the working directory: one whole run from a read-only checkout, started in another working
directory, with spaces in every path it writes to; paths that a tool cannot take are refused
when the run is planned."""

import os
import shlex
import shutil
import subprocess

import pytest

from genomon_smk.plan.path_limits import path_problems

from conftest import PAIR_SAMPLES, REPO, SNAKEMAKE, write_config

# --- paths a tool cannot take: refused at plan time, naming the config key


@pytest.mark.parametrize(
    "path, words",
    [
        ("/data/run\n2", ["config output_dir", "a newline"]),
        ("/data/run\t2", ["config output_dir", "a tab"]),
        ("/data/{sample}", ["config output_dir", "brace", "wildcard"]),
        ("/data/$GENOMON_UNSET/run", ["config output_dir", "$GENOMON_UNSET", "not set"]),
    ],
)
def test_paths_no_tool_can_take_are_named_with_their_key(path, words):
    [problem] = path_problems("output_dir", path)
    assert all(word in problem for word in words), problem


@pytest.mark.parametrize("path", ["/data/my run", "/data/it's", '/data/a"b', "/data/a&b;c=d,e:f#g", "/data/é", "/a$"])
def test_paths_that_quoting_makes_work_are_accepted(path):
    assert path_problems("output_dir", path) == []


def test_places_each_job_expands_are_shell_syntax_and_only_control_characters_refused():
    assert path_problems("storage.paths.node_local", "${TMPDIR:-/tmp}/genomon", expanded_by_job=True) == []
    assert path_problems("storage.paths.node_local", "$PJM_LOCALTMP\n", expanded_by_job=True)


def plan(config, tmp_path):
    """A dry run's exit status and output."""
    result = subprocess.run(
        [SNAKEMAKE, "-s", str(REPO / "workflow" / "Snakefile"), "--configfile", str(config), "-n", "--cores", "1"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    return result.returncode, result.stdout + result.stderr


def test_a_newline_in_output_dir_or_a_brace_in_shared_tmp_is_refused_before_planning(tmp_path, testdata):
    status, output = plan(write_config(tmp_path / "a", testdata, output_dir=str(tmp_path / "run\n2")), tmp_path)
    assert status != 0 and "config output_dir:" in output and "a newline" in output, output
    config = write_config(tmp_path / "b", testdata, storage={"paths": {"shared_tmp": str(tmp_path / "{x}")}})
    status, output = plan(config, tmp_path)
    assert status != 0 and "config storage.paths.shared_tmp:" in output and "wildcard" in output, output
    assert not (tmp_path / "run\n2").exists()


# --- the whole run, read-only checkout, another working directory, spaces everywhere

# Run as root in a private mount namespace: /tmp becomes a fresh tmpfs that holds only the
# directories the test needs (bound back in at their paths), so whatever the run leaves in /tmp
# is listed at the end, whatever else runs on the machine; the checkout is bound read-only.
ISOLATED = r"""
set -euo pipefail
stage="$STAGE"
mount -t tmpfs genomon-isolation "$stage"
for keep in "${KEEP[@]}"; do
    case "$keep" in /tmp/*)
        mkdir -p "$stage/${keep#/tmp/}"
        mount --bind "$keep" "$stage/${keep#/tmp/}" ;;
    esac
done
mount --move "$stage" /tmp
mount --bind "$CHECKOUT" "$CHECKOUT"
mount -o remount,bind,ro "$CHECKOUT"
if touch "$CHECKOUT/.isolation-probe" 2>/dev/null; then echo "checkout is writable" >&2; exit 90; fi
cd "$WORKDIR"
status=0
"${RUN[@]}" >"$HARNESS/snakemake.out" 2>&1 || status=$?
if [ $status = 0 ]; then "${REPORT[@]}" >"$HARNESS/report.out" 2>&1 || status=$?; fi
# What the run left in /tmp (the test's own directories are bound in: not listed).
prune=()
for keep in "${KEEP[@]}"; do prune+=(-path "$keep" -prune -o); done
find /tmp -mindepth 1 "${prune[@]}" -print0 >"$HARNESS/tmp-listing"
exit $status
"""


def namespace_available():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True)
    return probe.returncode == 0


def snapshot(root, skip=()):
    """Every path (files and directories) below root, except below the skipped ones."""
    found = set()
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if os.path.join(directory, d) not in skip]
        found.update(os.path.join(directory, name) for name in dirs + files)
    return found


def inside(path, places):
    return any(path == place or path.startswith(place.rstrip("/") + "/") for place in places)


def leads_to(path, places):
    """A directory made on the way to a place (the output directory's parent, say)."""
    return any(place.startswith(path.rstrip("/") + "/") for place in places)


@pytest.fixture(scope="module")
def isolated_run(tmp_path_factory, testdata, no_slurm_probe):
    """One whole run of the .test data (and the Snakemake report of it) as a shared, read-only
    install is used: the inputs, output_dir, the tier places and the working directory all hold
    a space, and HOME is an empty directory; returns what the tests check."""
    if not namespace_available():
        pytest.skip("needs root and `unshare --mount` (a private mount namespace)")
    base = tmp_path_factory.mktemp("isolation")
    basetemp = str(tmp_path_factory.getbasetemp())
    harness, stage = base / "harness", base / "harness" / "newtmp"
    stage.mkdir(parents=True)
    workdir, home = base / "working dir", base / "home"
    local_disk = base / "local disk"
    for directory in (workdir, home, local_disk):
        directory.mkdir()
    output_dir = base / "results dir" / "run 1"
    shared_tmp = base / "scratch space" / "shared tmp"
    inputs = base / "input data"  # the reference, FASTQs and sheets, in a directory with a space
    shutil.copytree(testdata, inputs)
    # The pair (tumor/normal, no panel): every rule runs, on fewer samples.
    rows = (inputs / "samples.tsv").read_text().splitlines(True)
    (inputs / "pair samples.tsv").write_text("".join(rows[:1] + [r for r in rows[1:] if r.split("\t")[0] in PAIR_SAMPLES]))
    (inputs / "pair.tsv").write_text("tumor\tnormal\tpanel\ntumor\tnormal\t\n")
    config = write_config(
        base / "config dir",
        inputs,
        samples=str(inputs / "pair samples.tsv"),
        cohort="pair",  # (a name taken from this file's would hold a space: refused, tests/test_wildcard_names.py)
        pairs=str(inputs / "pair.tsv"),
        control_panels={},
        output_dir=str(output_dir),
        # node_local is expanded by each job's shell, as $TMPDIR or $PJM_LOCALTMP on a cluster.
        storage={"paths": {"shared_tmp": str(shared_tmp), "node_local": "$GENOMON_LOCAL_DISK/node local"}},
    )
    checkout = str(REPO)

    # The checkout is not watched: it is read-only for the run (the script checks), and others
    # may edit it meanwhile.
    def look():
        return {
            "workdir": snapshot(workdir),
            "base": snapshot(base, skip=(str(harness), str(home))),
            "home": snapshot(home),
        }

    before = look()
    env = {
        key: value
        for key, value in no_slurm_probe.items()
        if not key.startswith(("XDG_", "MPL", "TMP", "TEMP")) and key not in ("TMPDIR", "HOME")
    }
    env.update(HOME=str(home), GENOMON_LOCAL_DISK=str(local_disk), STAGE=str(stage), CHECKOUT=checkout,
               WORKDIR=str(workdir), HARNESS=str(harness))
    keep = [basetemp] + ([checkout] if checkout.startswith("/tmp/") else [])
    snakemake = [SNAKEMAKE, "-s", f"{checkout}/workflow/Snakefile", "--profile", f"{checkout}/profiles/local",
                 "--configfile", str(config), "--cores", "2"]
    report = [*snakemake, "--report", str(output_dir / "report.html")]
    # The run, then the Snakemake report of it, in the same namespace.
    script = f"KEEP=({shlex.join(keep)})\nRUN=({shlex.join(snakemake)})\nREPORT=({shlex.join(report)})\n{ISOLATED}"
    result = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
                            env=env, capture_output=True, text=True, timeout=900)
    output = "".join((harness / name).read_text() for name in ("snakemake.out", "report.out")
                     if (harness / name).exists())
    if result.returncode != 0:
        pytest.fail(f"isolated run failed ({result.returncode}): {result.stderr}\n{output[-6000:]}")
    after = look()
    new = {place: sorted(after[place] - before[place]) for place in before}
    tmp_left = [p for p in (harness / "tmp-listing").read_bytes().decode().split("\0") if p]
    # The skeleton directories that lead to the bound-in directories are the test's own.
    tmp_left = [p for p in tmp_left if not any(k.startswith(p + "/") for k in keep)]
    return {
        "output_dir": output_dir,
        "allowed": [str(output_dir), str(shared_tmp), str(local_disk / "node local"), str(workdir / ".snakemake")],
        "new": new,
        "home": home,
        "tmp_left": tmp_left,
        "output": output,
    }


def test_nothing_is_written_outside_output_dir_tiers_and_dot_snakemake(isolated_run):
    # Snakemake itself makes its user source cache's directories before it reads the workflow
    # (its temporary directory inside is removed at exit): empty directories, no file.
    snakemake_own = [str(isolated_run["home"] / ".cache" / "snakemake")]
    allowed = isolated_run["allowed"]

    def expected(path):
        if os.path.isdir(path) and (inside(path, snakemake_own) or leads_to(path, snakemake_own)):
            return True
        return inside(path, allowed) or leads_to(path, allowed)

    outside = {place: [p for p in paths if not expected(p)] for place, paths in isolated_run["new"].items()}
    assert outside == {"workdir": [], "base": [], "home": []}
    assert isolated_run["tmp_left"] == []


def test_the_run_with_spaces_in_every_path_made_every_result(isolated_run):
    output_dir = isolated_run["output_dir"]
    for sample in PAIR_SAMPLES:
        bam = output_dir / "bam" / sample / f"{sample}.markdup.bam"
        assert bam.stat().st_size > 0 and (output_dir / "bam" / sample / f"{sample}.markdup.bam.bai").exists()
        metrics = (output_dir / "qc" / sample / f"{sample}.markdup_metrics.txt").read_text()
        assert "PERCENT_DUPLICATION" in metrics
        flagstat = (output_dir / "qc" / sample / f"{sample}.flagstat.txt").read_text()
        assert int(flagstat.split(" + 0 duplicates")[0].rsplit("\n", 1)[-1]) > 0
    assert (output_dir / "mutation" / "tumor" / "tumor.genomon_mutation.result.filt.vcf.gz").stat().st_size > 0
    assert (output_dir / "qc" / "multiqc_report.html").exists()
    assert (output_dir / "qc" / "timeline" / "timeline.png").stat().st_size > 0
    assert (output_dir / "report.html").stat().st_size > 0
    assert not (output_dir / ".genomon-smk.lock").exists()  # released at the end of the run


def test_every_work_dir_job_used_its_temp_tier(isolated_run):
    """merge_bam's work directory was once made from the arguments meant for `source` (a
    directory `job-work-dir.sh ` in the checkout): now each such rule reports its tier use."""
    rows = {}
    tsv = isolated_run["output_dir"] / "storage" / "job_tier_use.tsv"
    for line in tsv.read_text().splitlines()[1:]:
        rule, tier, jobs, _largest, _total = line.split("\t")
        rows[rule] = (tier, int(jobs))
    assert rows["merge_bam"] == ("node_local", len(PAIR_SAMPLES))
    assert {"map_reads", "markdup", "merge_bam"} <= set(rows)
