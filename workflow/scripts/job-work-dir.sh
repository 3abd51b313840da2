# Sourced by a rule's shell: gives the job its own empty work directory on the rule's temp tier
# and sets $work.    usage: source job-work-dir.sh WORK_DIR TIER LOG   (after job-shell.sh)
# Rules do not write this line themselves: tiers.smk's work_dir_setup(rule) makes it (the
# directory's name, quoted for the job's shell), and the rule's shell starts with
# `{params.work_dir_setup} {log:q}`.
#
# With $GENOMON_SMK_STORAGE_MONITOR 1 (the config's storage.monitor, which tiers.smk exports;
# unset: 1), the directory's size is measured (du) while the job runs, at least 2 s
# and 20 times the last du's duration apart (at most about 5% of the job's time, however many
# files it holds); at exit its peak is appended to the job's LOG as a "genomon-smk tier-use"
# line (the Snakemake process cannot see the node-local disks of other nodes, so each job
# reports its own use; job_tier_use.py sums the lines after the run). The directory is removed
# at exit by the job shell's EXIT trap (job-shell.sh, which first names a tier that is out of
# space). A job killed with SIGKILL skips the trap: its rerun starts by clearing the same
# directory.
work="$1"
work_tier="$2"
work_log="$3"
rm -rf "$work" "$work.sizes"
mkdir -p "$work"
# matplotlib (the timeline, the mutation summary) would write its font cache to $HOME.
export MPLCONFIGDIR="$work/.matplotlib"
work_sampler=""
# The sampler stops by itself when this shell is gone ($$ is the job's shell in the subshell too);
# its output goes nowhere, so nobody waits for it to close the job's stdout.
if [ "${GENOMON_SMK_STORAGE_MONITOR:-1}" = 1 ]; then
    (while kill -0 $$ 2>/dev/null; do
        began=$(date +%s%N)
        du -sb "$work" 2>/dev/null | cut -f1 >>"$work.sizes" || true
        wait_ms=$((($(date +%s%N) - began) / 50000))
        ((wait_ms >= 2000)) || wait_ms=2000
        sleep "$((wait_ms / 1000)).$(printf '%03d' $((wait_ms % 1000)))"
    done) </dev/null >/dev/null 2>&1 &
    work_sampler=$!
fi

finish_work_dir() {
    if [ -n "$work_sampler" ]; then
        kill "$work_sampler" 2>/dev/null || true
        wait "$work_sampler" 2>/dev/null || true
        du -sb "$work" 2>/dev/null | cut -f1 >>"$work.sizes" || true
        local peak
        peak=$(sort -n "$work.sizes" 2>/dev/null | tail -n 1 || true)
        printf 'genomon-smk tier-use\t%s\t%s\n' "$work_tier" "${peak:-0}" >>"$work_log" || true
    fi
    rm -rf "$work" "$work.sizes"
}
job_exit_cleanup=finish_work_dir
# Rules source this inside `( ... ) >log`: a subshell, which runs no EXIT trap of the job shell's
# and whose variables the job shell never sees. Its own trap does the same, when it ends.
trap job_exit EXIT
