"""An install without root, as on Fugaku or a university cluster: an ordinary user (made here with
useradd), a PATH with none of the bioinformatics tools and no apt, installs with `bin/install`
(the venvs from PyPI only; it says which tool is missing and how to get it), then with the tools
from real environment modules (Debian's Lmod; modulefiles putting directories of links to
Debian's binaries, outside PATH, on PATH) the install check passes and the pair scenario runs
through `--sdm env-modules` with the local results.

Needs root (to make the user) and Lmod (bin/install installs it). The pip cache of the user's
installs is kept under BASE between test runs, so a rerun builds its venvs from the cache."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, assert_same_pair_results, pair_targets

pytestmark = [pytest.mark.slow, pytest.mark.workflow]

USER = "genomon-user"
BASE = Path("/tmp/genomon-smk-user-install")
LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")
# Modules as a site names them, each with the Debian binaries it provides.
MODULES = {
    "bwa/0.7.17": ["bwa"],
    "samtools/1.16.1": ["samtools"],
    "biobambam2/2.0.185": ["bamsort", "bammerge", "bammarkduplicates", "bamtofastq"],
    "htslib/1.16": ["tabix", "bgzip"],
    "mosdepth/0.3.3": ["mosdepth"],
}
ENVMODULES = {
    "map": ["bwa/0.7.17", "samtools/1.16.1", "biobambam2/2.0.185"],
    "markdup": ["biobambam2/2.0.185", "samtools/1.16.1"],
    "python": ["samtools/1.16.1", "htslib/1.16"],
    "qc": ["samtools/1.16.1", "mosdepth/0.3.3"],
    "sv": ["htslib/1.16"],
}
# Never on the user's PATH: every tool a module provides, and their relatives.
HIDDEN = {binary for binaries in MODULES.values() for binary in binaries} | {
    "bcftools", "htsfile", "wgsim", "sambamba", "samblaster", "bamsormadup", "bammarkduplicates2", "bamcat"}

needs_root_and_lmod = pytest.mark.skipif(
    os.geteuid() != 0 or not LMOD_INIT.is_file() or shutil.which("runuser") is None,
    reason="needs root (useradd, runuser) and Lmod (bin/install)")


def make_user():
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", USER], check=True)


def copy_checkout(destination: Path):
    """The checkout's files (tracked and new, not ignored: no venvs, no .test/data)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def user_path(run: Path) -> Path:
    """A directory of links to /usr/bin's programs except the HIDDEN tools: the user's PATH."""
    bindir = run / "usr-bin"
    bindir.mkdir()
    for entry in os.scandir("/usr/bin"):
        if entry.name not in HIDDEN:
            (bindir / entry.name).symlink_to(entry.path)
    return bindir


def site_modules(run: Path) -> Path:
    """Lmod modulefiles NAME/VERSION.lua over software directories outside PATH."""
    for module, binaries in MODULES.items():
        name, version = module.split("/")
        bindir = run / "software" / name / version / "bin"
        bindir.mkdir(parents=True)
        for binary in binaries:
            (bindir / binary).symlink_to(f"/usr/bin/{binary}")
        (run / "modulefiles" / name).mkdir(parents=True, exist_ok=True)
        (run / "modulefiles" / name / f"{version}.lua").write_text(
            f'whatis("{name} {version}, Debian\'s build")\nprepend_path("PATH", "{bindir}")\n')
    return run / "modulefiles"


def as_user(script: str, path: Path, modulepath: Path, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """`script` in bash as USER, with a login-like environment: HOME, the restricted PATH, Lmod's
    `module` (its init, as a site's profile sources it) and the machine's pip settings."""
    env = {"HOME": f"/home/{USER}", "USER": USER, "LOGNAME": USER, "PATH": str(path), "LANG": "C.UTF-8",
           "MODULEPATH": str(modulepath), "PIP_CACHE_DIR": str(BASE / "pip-cache"),
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    env.update({key: value for key, value in os.environ.items() if key.startswith("PIP_") and key not in env})
    command = ["runuser", "-u", USER, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()),
               "bash", "-c", f"source {LMOD_INIT} >/dev/null\nset -e\n{script}"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@needs_root_and_lmod
@pytest.mark.timeout(1500)
def test_a_user_without_root_installs_and_runs_the_pair_with_tools_from_modules(scenario_root, request):
    make_user()
    BASE.mkdir(exist_ok=True)
    (BASE / "pip-cache").mkdir(exist_ok=True)
    subprocess.run(["chown", f"{USER}:", str(BASE), str(BASE / "pip-cache")], check=True)
    run = BASE / "run"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir()
    checkout = run / "genomon-smk"
    copy_checkout(checkout)
    path, modulepath = user_path(run), site_modules(run)
    # The pair scenario beside a copy of the test data, readable by the user.
    scenarios = run / "scenarios"
    shutil.copytree(scenario_root / "data", scenarios / "data", symlinks=False)
    shutil.copytree(scenario_root / "config-pair", scenarios / "config-pair")
    config_path = scenarios / "config-pair" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config_path.write_text(yaml.safe_dump({**config, "envmodules": ENVMODULES}))
    subprocess.run(["chown", "-R", f"{USER}:", str(run)], check=True)

    # No tool on PATH and no modules named: the venvs are built, then the check names each tool.
    first = as_user("bash bin/install", path, modulepath, checkout, timeout=900)
    output = first.stdout + first.stderr
    assert first.returncode == 1, output[-5000:]
    assert "installing as a user" in output and "apt packages" not in output
    assert "missing: bwa (tool group 'map'" in output, output[-5000:]
    assert "module avail bwa" in output and "spack install bwa@0.7.17" in output
    assert "missing: bammarkduplicates (tool group 'markdup'" in output
    assert (checkout / ".venv" / "bin" / "snakemake").exists() and (checkout / ".venv-sv" / "bin" / "GenomonSV").exists()
    assert not (checkout / "build").exists()

    # With the config's modules: every tool found in its module's directory, none on PATH.
    second = as_user(f"bash bin/install --configfile {config_path}", path, modulepath, checkout, timeout=600)
    output = second.stdout + second.stderr
    assert second.returncode == 0, output[-5000:]
    assert f"map: bwa = {run}/software/bwa/0.7.17/bin/bwa (module load" in output, output[-3000:]
    assert "[install] ok:" in output

    # The pair scenario through --sdm env-modules: the tools exist only in the modules.
    results = (scenarios / "config-pair" / config["output_dir"]).resolve()
    targets = " ".join(pair_targets(results))
    run_pair = as_user(
        f".venv/bin/snakemake --profile profiles/local --configfile {config_path} --sdm env-modules --cores 2 "
        f"-- {targets}", path, modulepath, checkout, timeout=1200)
    output = run_pair.stdout + run_pair.stderr
    assert run_pair.returncode == 0, output[-6000:]
    assert "Activating environment modules: bwa/0.7.17, samtools/1.16.1, biobambam2/2.0.185" in output
    assert_same_pair_results(results, request)
    shutil.rmtree(run, ignore_errors=True)  # the venvs and results (kept when a check failed); the pip cache stays
