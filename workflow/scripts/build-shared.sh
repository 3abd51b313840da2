# Sourced by a set-up rule's shell: builds a shared build directory of resources_dir once, which
# runs of other projects share, and links its files into the project (the links are the job's
# outputs: Snakemake removes a job's outputs before it runs it, and must never remove the shared
# files under another project's readers). Waits for any other run building the same directory;
# when that run has meanwhile built every file, links them and ends the job at once.
#     usage: source build-shared.sh BUILD OUTPUT...
# BUILD: the build directory under resources_dir ($genomon_resources, set by the shell prefix);
# OUTPUT: the project's links, each to the file of its name in the build directory. Sets
# $shared_dir (where the job writes, each file beside and renamed when whole) and link_built
# (the job's last command). The lock is held until the job's shell exits.
shared_dir="$genomon_resources/$1"
shift
build_links=("$@")
mkdir -p "$shared_dir"
exec 9>>"$shared_dir/.build.lock"
flock 9

link_built() {
    local output
    for output in "${build_links[@]}"; do
        mkdir -p "$(dirname "$output")"
        ln -sfn "$shared_dir/$(basename "$output")" "$output"
    done
}

build_done=1
for output in "${build_links[@]}"; do
    [ -s "$shared_dir/$(basename "$output")" ] || build_done=0
done
if [ "$build_done" = 1 ]; then
    echo "build-shared: $shared_dir is built (by another run, or an earlier one); linking it"
    link_built
    exit 0
fi
