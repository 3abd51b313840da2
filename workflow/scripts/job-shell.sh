# Sourced first by every job's shell (Snakemake's shell prefix: tiers.smk's job_shell_prefix):
# sets the job's EXIT trap. When the job fails, each storage tier whose file system is out of
# space is named, with what the storage plan expected there (genomon_smk.runtime.tier_space), on
# stderr and in the job's log when job-work-dir.sh gave it one: tools that die of a full disk
# often do not say so (bamsort aborts with SIGABRT). This runs before job-work-dir.sh removes
# the job's work directory, whose removal would free the space again.
#     usage: source job-shell.sh PYTHON [TIER PLACE_WORD PLANNED_BYTES]...
# PYTHON is a command of the job's shell; a PLACE_WORD is a word of it, expanded only at a
# failure ($TMPDIR may be unset where no job uses node_local).
# It also gives the rules' commands what depends on where the checkout and the interpreter are,
# so that no rule's params or code holds such a path (Snakemake reruns a job whose params or
# code changed: another checkout, or `python -m snakemake`, would rerun every job):
#   genomon_python ARGS...  the project's Python (PYTHON) with ARGS (bin/genomon_python, on PATH);
#   $genomon_scripts        this directory (workflow/scripts) of the checkout that runs the job.
job_python="$1"
shift
genomon_scripts="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GENOMON_JOB_PYTHON="$job_python"
export PATH="$genomon_scripts/bin:$PATH"
job_tiers=("$@")
job_exit_cleanup=""

report_full_tiers() {
    local args=() i place report
    for ((i = 0; i + 2 < ${#job_tiers[@]}; i += 3)); do
        place=$(
            set +u
            eval "printf '%s' ${job_tiers[i + 1]}"
        ) || continue
        args+=(--tier "${job_tiers[i]}" "$place" "${job_tiers[i + 2]}")
    done
    report=$(eval "$job_python -m genomon_smk.runtime.tier_space \"\${args[@]}\"") || return 0
    [ -n "$report" ] || return 0
    printf '%s\n' "$report" >&2
    if [ -n "${work_log-}" ]; then
        printf '%s\n' "$report" 2>/dev/null >>"$work_log" || true
    fi
}

job_exit() {
    local status=$?
    if [ "$status" -ne 0 ]; then
        report_full_tiers || true
    fi
    if [ -n "$job_exit_cleanup" ]; then
        "$job_exit_cleanup"
    fi
}
trap job_exit EXIT
